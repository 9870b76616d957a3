// Internal to src/train: the one-pass AdamW kernel (train/common/cuda/adamw_kernels.h) behind optimizer.cpp.
// Built only with MUSACODER_HAVE_TRAIN_CUDA_KERNELS (src/train/CMakeLists.txt).
#pragma once

#include <ATen/ATen.h>

#include <vector>

namespace musacoder::train::detail {

struct AdamWItem {
  at::Tensor param;                        // bfloat16 or float16, contiguous, on CUDA
  at::Tensor master, exp_avg, exp_avg_sq;  // float32, contiguous, same device and size
  at::Tensor grad;                         // float32, float16 or bfloat16, contiguous, same device and size
  double weight_decay = 0;
};

// Whether the kernel takes this item.
bool cuda_adamw_takes(const AdamWItem& item);

// One AdamW step (torch.optim.AdamW's update at step count `step`, after its increment) over items the kernel
// takes, all with one parameter dtype: one launch per gradient dtype among them, on the current stream. The
// descriptors travel in one pinned host-to-device copy. grad_scale: a one-element float32 device tensor (the
// gradient is divided by it) or undefined.
void cuda_adamw_step(const std::vector<AdamWItem>& items, double lr, double beta1, double beta2, double eps,
                     int64_t step, const at::Tensor& grad_scale);

}  // namespace musacoder::train::detail
