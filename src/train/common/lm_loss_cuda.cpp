#include "train/common/lm_loss_cuda.h"

#include <ATen/cuda/CUDABlas.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/version.h>

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

// at::cuda::blas::gemm with a float32 output for 16-bit inputs: torch 2.8 and later.
#define MUSACODER_HAVE_GEMM_FLOAT_OUT \
  (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 8))

bool cuda_accumulate_takes(const at::Tensor& acc, const at::Tensor& a, const at::Tensor& b) {
  if (!MUSACODER_HAVE_GEMM_FLOAT_OUT) return false;
  const at::ScalarType t = a.scalar_type();
  return acc.is_cuda() && acc.scalar_type() == at::kFloat && acc.dim() == 2 && acc.is_contiguous() &&
         (t == at::kBFloat16 || t == at::kHalf) && b.scalar_type() == t && a.device() == acc.device() &&
         b.device() == acc.device() && a.dim() == 2 && b.dim() == 2 && a.stride(1) == 1 && b.stride(1) == 1 &&
         a.size(0) == b.size(0) && a.size(0) > 0 && acc.size(0) == a.size(1) && acc.size(1) == b.size(1);
}

void cuda_accumulate_at_b(at::Tensor& acc, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(cuda_accumulate_takes(acc, a, b), "cuda_accumulate_at_b: unsupported operands");
  // Column-major, as cuBLAS sees the row-major tensors: acc is accᵀ (C, V) = bᵀ (C, rows) · a (rows, V),
  // where b as stored is bᵀ (op n, ld = b's row stride) and a as stored is aᵀ (V, rows), taken as op t.
#if MUSACODER_HAVE_GEMM_FLOAT_OUT
  const int64_t rows = a.size(0), V = acc.size(0), C = acc.size(1);
  if (a.scalar_type() == at::kBFloat16) {
    at::cuda::blas::gemm<at::BFloat16, float>('n', 't', C, V, rows, 1.f, b.data_ptr<at::BFloat16>(),
                                              b.stride(0), a.data_ptr<at::BFloat16>(), a.stride(0), 1.f,
                                              acc.data_ptr<float>(), acc.stride(0));
  } else {
    at::cuda::blas::gemm<at::Half, float>('n', 't', C, V, rows, 1.f, b.data_ptr<at::Half>(), b.stride(0),
                                          a.data_ptr<at::Half>(), a.stride(0), 1.f, acc.data_ptr<float>(),
                                          acc.stride(0));
  }
#endif
}

}  // namespace musacoder::train::detail
