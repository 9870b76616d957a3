// libtorch side of the one-pass AdamW kernel (CUDA builds only): checks, descriptors, current stream.
#include "train/common/adamw_cuda.h"

#include <c10/cuda/CUDAStream.h>

#include <cmath>
#include <cstring>
#include <map>

#include "model/kernel_dtype.h"
#include "train/common/cuda/adamw_kernels.h"

namespace musacoder::train::detail {
namespace {

bool float_like(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() && t.scalar_type() == at::kFloat && t.is_contiguous() && t.device() == like.device() &&
         t.numel() == like.numel();
}

// The descriptors of one launch (tensors, then first blocks) as one device buffer, through pinned memory.
at::Tensor upload(const std::vector<cuda::AdamWTensor>& tensors, const std::vector<int64_t>& first,
                  const at::Device& device) {
  const size_t tbytes = tensors.size() * sizeof(cuda::AdamWTensor), fbytes = first.size() * sizeof(int64_t);
  at::Tensor host =
      at::empty({static_cast<int64_t>(tbytes + fbytes)}, at::TensorOptions().dtype(at::kByte)).pin_memory();
  std::memcpy(host.data_ptr(), tensors.data(), tbytes);
  std::memcpy(static_cast<char*>(host.data_ptr()) + tbytes, first.data(), fbytes);
  return host.to(device, /*non_blocking=*/true);
}

}  // namespace

bool cuda_adamw_takes(const AdamWItem& it) {
  const at::Tensor& p = it.param;
  if (!p.defined() || !p.is_cuda() || !p.is_contiguous() || p.numel() == 0) return false;
  if (p.scalar_type() != at::kBFloat16 && p.scalar_type() != at::kHalf) return false;
  if (!float_like(it.master, p) || !float_like(it.exp_avg, p) || !float_like(it.exp_avg_sq, p)) return false;
  const at::Tensor& g = it.grad;
  return g.defined() && g.is_contiguous() && g.device() == p.device() && g.numel() == p.numel() &&
         (g.scalar_type() == at::kFloat || g.scalar_type() == at::kBFloat16 || g.scalar_type() == at::kHalf);
}

void cuda_adamw_step(const std::vector<AdamWItem>& items, double lr, double beta1, double beta2, double eps,
                     int64_t step, const at::Tensor& grad_scale) {
  if (items.empty()) return;
  const at::Tensor& first_param = items.front().param;
  std::map<int, std::vector<const AdamWItem*>> by_grad;  // one launch per gradient dtype
  for (const AdamWItem& it : items) {
    TORCH_CHECK(cuda_adamw_takes(it) && it.param.scalar_type() == first_param.scalar_type(),
                "cuda_adamw_step: an item the kernel does not take");
    by_grad[model::kernel_dtype_code(it.grad, "cuda_adamw_step")].push_back(&it);
  }
  const double bias1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias2 = 1 - std::pow(beta2, static_cast<double>(step));
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  for (const auto& [grad_dtype, group] : by_grad) {
    std::vector<cuda::AdamWTensor> tensors;
    std::vector<int64_t> first = {0};
    for (const AdamWItem* it : group) {
      tensors.push_back({it->param.data_ptr(), it->master.data_ptr<float>(), it->exp_avg.data_ptr<float>(),
                         it->exp_avg_sq.data_ptr<float>(), it->grad.data_ptr(), it->param.numel(),
                         static_cast<float>(it->weight_decay)});
      first.push_back(first.back() +
                      (it->param.numel() + cuda::kAdamWBlockElems - 1) / cuda::kAdamWBlockElems);
    }
    const at::Tensor descriptors =
        upload(tensors, first, first_param.device());  // freed after the launch is queued
    cuda::AdamWLaunch a;
    a.tensors = reinterpret_cast<const cuda::AdamWTensor*>(descriptors.data_ptr());
    a.first_block = reinterpret_cast<const int64_t*>(static_cast<const char*>(descriptors.data_ptr()) +
                                                     tensors.size() * sizeof(cuda::AdamWTensor));
    a.count = static_cast<int>(tensors.size());
    a.blocks = first.back();
    a.param_dtype = model::kernel_dtype_code(first_param, "cuda_adamw_step");
    a.grad_dtype = grad_dtype;
    a.lr = static_cast<float>(lr), a.beta1 = static_cast<float>(beta1), a.beta2 = static_cast<float>(beta2);
    a.eps = static_cast<float>(eps);
    a.step_size = static_cast<float>(lr / bias1);
    a.bias2_sqrt = static_cast<float>(std::sqrt(bias2));
    a.grad_scale = grad_scale.defined() ? grad_scale.data_ptr<float>() : nullptr;
    const int err = cuda::adamw_launch(a, stream);
    TORCH_CHECK(err == 0, "cuda_adamw_step: launch failed (cudaError ", err, ")");
  }
}

}  // namespace musacoder::train::detail
