// The SwiGLU kernels; see swiglu_kernels.h.
//
// tests/unit/model/swiglu_emulated_test.cpp includes this file on the CPU with MUSACODER_CUDA_EMULATION
// defined (tests/support/cuda_emulation.h): the kernels run as written, the launchers are left out.
#ifndef MUSACODER_CUDA_EMULATION
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/cuda_dtype.cuh"
#endif

#include <cmath>

#include "model/cuda/swiglu_kernels.h"

namespace musacoder::model::cuda {
namespace {

constexpr int kSwigluThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kSwigluThreads) forward_kernel(SwigluArgs a) {
  const T *g = static_cast<const T*>(a.gate), *u = static_cast<const T*>(a.up);
  T* out = static_cast<T*>(a.out);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < a.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float x = to_float(g[i]);
    const float s = round_to<T>(x / (1.0f + expf(-x)));
    out[i] = from_float<T>(s * to_float(u[i]));
  }
}

template <typename T>
__global__ void __launch_bounds__(kSwigluThreads) backward_kernel(SwigluArgs a) {
  const T *g = static_cast<const T*>(a.gate), *u = static_cast<const T*>(a.up),
          *dy = static_cast<const T*>(a.grad);
  T *dg = static_cast<T*>(a.d_gate), *du = static_cast<T*>(a.d_up);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < a.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float x = to_float(g[i]), grad = to_float(dy[i]);
    const float sig = 1.0f / (1.0f + expf(-x));
    const float s = round_to<T>(x / (1.0f + expf(-x)));
    du[i] = from_float<T>(grad * s);
    const float ds = round_to<T>(grad * to_float(u[i]));
    dg[i] = from_float<T>(ds * sig * (1.0f + x * (1.0f - sig)));
  }
}

}  // namespace

#ifndef MUSACODER_CUDA_EMULATION
int swiglu_forward(const SwigluArgs& a, Stream stream) {
  if (a.n == 0) return 0;
  return launch_by_dtype(a.dtype, [&](auto tag) {
    forward_kernel<typename decltype(tag)::type>
        <<<grid_stride_blocks(a.n, kSwigluThreads, 65535 * 8), kSwigluThreads, 0, stream>>>(a);
  });
}

int swiglu_backward(const SwigluArgs& a, Stream stream) {
  if (a.n == 0) return 0;
  return launch_by_dtype(a.dtype, [&](auto tag) {
    backward_kernel<typename decltype(tag)::type>
        <<<grid_stride_blocks(a.n, kSwigluThreads, 65535 * 8), kSwigluThreads, 0, stream>>>(a);
  });
}
#endif  // MUSACODER_CUDA_EMULATION

}  // namespace musacoder::model::cuda
