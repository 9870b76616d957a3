#include "train/common/lm_loss_cuda.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <limits>

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

// A float32-output GEMM for 16-bit inputs: cublasGemmEx on torch's handle and stream. torch's own
// at::cuda::blas::gemm<T, float> is declared in its headers but not exported by every libtorch (2.11's lacks
// it), and linking a cuBLAS of our own could load another version than the one torch was built with under the
// same soname. So the function is taken at run time from the cuBLAS libtorch_cuda loaded; where it is not
// found, cuda_accumulate_takes says false and the torch path accumulates.
using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                  const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                  const void*, void*, cudaDataType, int, cublasComputeType_t,
                                  cublasGemmAlgo_t);
GemmEx gemm_ex() {
  static const GemmEx f = reinterpret_cast<GemmEx>(dlsym(RTLD_DEFAULT, "cublasGemmEx"));
  return f;
}

bool cuda_accumulate_takes(const at::Tensor& acc, const at::Tensor& a, const at::Tensor& b) {
  const at::ScalarType t = a.scalar_type();
  const int64_t int_max = std::numeric_limits<int>::max();
  return gemm_ex() != nullptr && acc.is_cuda() && acc.scalar_type() == at::kFloat && acc.dim() == 2 &&
         acc.is_contiguous() && (t == at::kBFloat16 || t == at::kHalf) && b.scalar_type() == t &&
         a.device() == acc.device() && b.device() == acc.device() && a.dim() == 2 && b.dim() == 2 &&
         a.stride(1) == 1 && b.stride(1) == 1 && a.size(0) == b.size(0) && a.size(0) > 0 &&
         acc.size(0) == a.size(1) && acc.size(1) == b.size(1) && a.size(0) <= int_max &&
         acc.numel() <= int_max && a.stride(0) <= int_max && b.stride(0) <= int_max;
}

void cuda_accumulate_at_b(at::Tensor& acc, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(cuda_accumulate_takes(acc, a, b), "cuda_accumulate_at_b: unsupported operands");
  // Column-major, as cuBLAS sees the row-major tensors: acc is accᵀ (C, V) = bᵀ (C, rows) · a (rows, V),
  // where b as stored is bᵀ (op n, ld = b's row stride) and a as stored is aᵀ (V, rows), taken as op t.
  const int rows = static_cast<int>(a.size(0)), V = static_cast<int>(acc.size(0)),
            C = static_cast<int>(acc.size(1));
  const cudaDataType in = a.scalar_type() == at::kBFloat16 ? CUDA_R_16BF : CUDA_R_16F;
  const float one = 1.f;
  const cublasStatus_t status =
      gemm_ex()(at::cuda::getCurrentCUDABlasHandle(), CUBLAS_OP_N, CUBLAS_OP_T, C, V, rows, &one,
                b.data_ptr(), in, static_cast<int>(b.stride(0)), a.data_ptr(), in,
                static_cast<int>(a.stride(0)), &one, acc.data_ptr<float>(), CUDA_R_32F,
                static_cast<int>(acc.stride(0)), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cuda_accumulate_at_b: cublasGemmEx failed with status ",
              static_cast<int>(status));
}

}  // namespace musacoder::train::detail
