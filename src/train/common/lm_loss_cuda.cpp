#include "train/common/lm_loss_cuda.h"

#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "model/kernel_dtype.h"
#include "train/common/cuda/lm_loss_kernels.h"

namespace musacoder::train::detail {
namespace {

void check(int err, const char* what) {
  TORCH_CHECK(err == 0, "LM loss CUDA kernel ", what, ": ",
              cudaGetErrorString(static_cast<cudaError_t>(err)));
}

cuda::LmLogits view_of(const at::Tensor& logits, const at::Tensor& targets) {
  return {logits.data_ptr(), model::kernel_dtype_code(logits, "LM loss"),
          logits.size(0),    logits.size(1),
          logits.stride(0),  targets.data_ptr<int64_t>()};
}

void* stream() {
  return c10::cuda::getCurrentCUDAStream().stream();
}

}  // namespace

bool cuda_lm_kernels_take(const at::Tensor& logits, const at::Tensor& targets) {
  return logits.is_cuda() && logits.dim() == 2 && logits.stride(1) == 1 &&
         logits.stride(0) >= logits.size(1) && model::kernel_dtype_supported(logits.scalar_type()) &&
         targets.scalar_type() == at::kLong && targets.device() == logits.device() &&
         targets.is_contiguous() && targets.numel() == logits.size(0);
}

std::pair<at::Tensor, at::Tensor> cuda_lm_rows(const at::Tensor& logits, const at::Tensor& targets) {
  auto f32 = logits.options().dtype(at::kFloat);
  at::Tensor lse = at::empty({logits.size(0)}, f32), target_logit = at::empty({logits.size(0)}, f32);
  check(cuda::lm_loss_rows(view_of(logits, targets), lse.data_ptr<float>(), target_logit.data_ptr<float>(),
                           stream()),
        "rows");
  return {lse, target_logit};
}

at::Tensor cuda_lm_grad(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& lse,
                        const at::Tensor& scale) {
  const at::Tensor l = lse.contiguous(), g = scale.to(at::kFloat).contiguous();
  TORCH_CHECK(g.numel() == 1 && g.device() == logits.device(),
              "cuda_lm_grad: scale must be one float on the device");
  at::Tensor grad = at::empty({logits.size(0), logits.size(1)}, logits.options());
  check(cuda::lm_loss_grad(view_of(logits, targets), l.data_ptr<float>(), g.data_ptr<float>(),
                           grad.data_ptr(), stream()),
        "grad");
  return grad;
}

}  // namespace musacoder::train::detail
