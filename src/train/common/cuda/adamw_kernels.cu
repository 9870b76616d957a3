// The one-pass AdamW kernel for low-precision parameters with float32 masters; see adamw_kernels.h.
//
// tests/unit/train/adamw_emulated_test.cpp includes this file on the CPU with MUSACODER_CUDA_EMULATION
// defined (tests/support/cuda_emulation.h): the kernel runs as written, the launcher is left out.
#ifndef MUSACODER_CUDA_EMULATION
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/cuda_dtype.cuh"
#endif

#include <cmath>

#include "train/common/cuda/adamw_kernels.h"

namespace musacoder::train::cuda {
namespace {

// The tensor whose blocks hold `block`: the last i with first_block[i] <= block.
__device__ __forceinline__ int tensor_of(const AdamWLaunch& a, int64_t block) {
  int lo = 0, hi = a.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (a.first_block[mid] <= block)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// One block per kAdamWBlockElems elements of one tensor; threads stride over them (coalesced).
template <typename P, typename G>
__global__ void __launch_bounds__(kAdamWThreads) adamw_kernel(AdamWLaunch a) {
  const int64_t block = blockIdx.x;
  const int k = tensor_of(a, block);
  const AdamWTensor t = a.tensors[k];
  const G* grad = static_cast<const G*>(t.grad);
  const int64_t begin = (block - a.first_block[k]) * kAdamWBlockElems;
  const int64_t end = min(begin + kAdamWBlockElems, t.n);
  const float scale = a.grad_scale != nullptr ? *a.grad_scale : 1.f;
  const float decay = a.lr * t.weight_decay;
#pragma unroll 4
  for (int64_t i = begin + threadIdx.x; i < end; i += kAdamWThreads) {
    float g = to_float(grad[i]);
    if (a.grad_scale != nullptr) g /= scale;
    float p = t.master[i], m = t.exp_avg[i], v = t.exp_avg_sq[i];
    p -= decay * p;
    m = a.beta1 * m + (1.f - a.beta1) * g;
    v = a.beta2 * v + (1.f - a.beta2) * g * g;
    const float denom = sqrtf(v) / a.bias2_sqrt + a.eps;
    p -= a.step_size * m / denom;
    t.master[i] = p, t.exp_avg[i] = m, t.exp_avg_sq[i] = v;
    static_cast<P*>(t.param)[i] = from_float<P>(p);
  }
}

}  // namespace

#ifndef MUSACODER_CUDA_EMULATION
int adamw_launch(const AdamWLaunch& a, void* stream) {
  if (a.count <= 0 || a.blocks <= 0) return cudaSuccess;
  if (a.blocks > 0x7FFFFFFFll) return cudaErrorInvalidValue;
  auto s = static_cast<cudaStream_t>(stream);
  const dim3 grid(static_cast<unsigned>(a.blocks));
  auto with_param = [&](auto param_tag) {
    using P = typename decltype(param_tag)::type;
    return launch_by_dtype(a.grad_dtype, [&](auto grad_tag) {
      adamw_kernel<P, typename decltype(grad_tag)::type><<<grid, kAdamWThreads, 0, s>>>(a);
    });
  };
  if (a.param_dtype == 1) return with_param(DtypeTag<__half>{});
  if (a.param_dtype == 2) return with_param(DtypeTag<__nv_bfloat16>{});
  return cudaErrorInvalidValue;
}
#endif

}  // namespace musacoder::train::cuda
