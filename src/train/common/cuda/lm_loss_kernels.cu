// The chunked LM-head cross-entropy kernels; see lm_loss_kernels.h.
//
// tests/unit/train/lm_loss_emulated_test.cpp includes this file on the CPU with MUSACODER_CUDA_EMULATION
// defined (tests/support/cuda_emulation.h): the kernels run as written, the launchers are left out.
#ifndef MUSACODER_CUDA_EMULATION
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/cuda_dtype.cuh"
#endif

#include <cfloat>
#include <cmath>

#include "train/common/cuda/lm_loss_kernels.h"

namespace musacoder::train::cuda {
namespace {

constexpr int kRowThreads = 256;
constexpr int kGradThreads = 256;

// (m, s) pairs of an online log-sum-exp: s = Σ exp(x − m). Merging keeps the larger max.
struct MaxSum {
  float m = -FLT_MAX, s = 0.f;
};
__device__ MaxSum merge(MaxSum a, MaxSum b) {
  if (b.m > a.m) {
    MaxSum t = a;
    a = b;
    b = t;
  }
  return {a.m, a.s + b.s * expf(b.m - a.m)};
}

// One block per row: each thread folds its strided share of the row, then the block merges the pairs.
template <typename T>
__global__ void __launch_bounds__(kRowThreads) rows_kernel(LmLogits a, float* lse, float* target_logit) {
  const int64_t row = blockIdx.x;
  const T* x = static_cast<const T*>(a.data) + row * a.ld;
  MaxSum acc;
  for (int64_t v = threadIdx.x; v < a.vocab; v += blockDim.x) acc = merge(acc, {to_float(x[v]), 1.f});
  __shared__ float ms[kRowThreads], ss[kRowThreads];
  ms[threadIdx.x] = acc.m, ss[threadIdx.x] = acc.s;
  __syncthreads();
  for (int half = kRowThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      const MaxSum m =
          merge({ms[threadIdx.x], ss[threadIdx.x]}, {ms[threadIdx.x + half], ss[threadIdx.x + half]});
      ms[threadIdx.x] = m.m, ss[threadIdx.x] = m.s;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    lse[row] = ms[0] + logf(ss[0]);
    target_logit[row] = to_float(x[a.targets[row]]);
  }
}

template <typename T>
__global__ void __launch_bounds__(kGradThreads)
    grad_kernel(LmLogits a, const float* lse, const float* scale, T* grad) {
  const int64_t n = a.rows * a.vocab;
  const float g = *scale;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / a.vocab, v = i % a.vocab;
    const float logit = to_float(static_cast<const T*>(a.data)[row * a.ld + v]);
    float p = expf(logit - lse[row]);
    if (v == a.targets[row]) p -= 1.f;
    grad[i] = from_float<T>(p * g);
  }
}

}  // namespace

#ifndef MUSACODER_CUDA_EMULATION
int lm_loss_rows(const LmLogits& a, float* lse, float* target_logit, void* stream) {
  if (a.rows == 0) return 0;
  if (a.vocab < 1 || a.ld < a.vocab || a.rows > 2147483647) return cudaErrorInvalidValue;
  auto s = static_cast<cudaStream_t>(stream);
  return launch_by_dtype(a.dtype, [&](auto tag) {
    rows_kernel<typename decltype(tag)::type>
        <<<static_cast<unsigned>(a.rows), kRowThreads, 0, s>>>(a, lse, target_logit);
  });
}

int lm_loss_grad(const LmLogits& a, const float* lse, const float* scale, void* grad, void* stream) {
  if (a.rows == 0) return 0;
  if (a.vocab < 1 || a.ld < a.vocab) return cudaErrorInvalidValue;
  auto s = static_cast<cudaStream_t>(stream);
  return launch_by_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    grad_kernel<T><<<grid_stride_blocks(a.rows * a.vocab, kGradThreads, 65535 * 8), kGradThreads, 0, s>>>(
        a, lse, scale, static_cast<T*>(grad));
  });
}
#endif  // MUSACODER_CUDA_EMULATION

}  // namespace musacoder::train::cuda
