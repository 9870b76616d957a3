// layout_inputs (delta_rule_kernels.h): the delta rule's inputs from the model's layout to the kernels', one
// warp per (row, token).
//
// tests/unit/model/delta_layout_emulated_test.cpp includes this file on the CPU with MUSACODER_CUDA_EMULATION
// defined (tests/support/cuda_emulation.h): the kernel runs as written, the launcher is left out.
#ifndef MUSACODER_CUDA_EMULATION
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/cuda_dtype.cuh"
#endif

#include "model/cuda/delta_rule_kernels.h"

namespace musacoder::model::cuda {
namespace {

constexpr int kLayoutThreads = 256;

// dst = l2norm(src) · scale over d elements, the lanes of one warp striding the row.
template <typename T>
__device__ void normalized_row(const T* src, int64_t d, float scale, float eps, float* dst, int lane) {
  float sq = 0.f;
  for (int64_t i = lane; i < d; i += 32) {
    const float x = to_float(src[i]);
    sq += x * x;
  }
  const float r = rsqrtf(warp_sum(sq) + eps);
  for (int64_t i = lane; i < d; i += 32) dst[i] = to_float(src[i]) * r * scale;
}

template <typename T>
__global__ void __launch_bounds__(kLayoutThreads) layout_kernel(LayoutArgs a) {
  const int64_t item =
      (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;  // row · T_padded + t
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (item >= a.B * a.Hv * a.T_padded) return;  // a whole warp at once
  const int64_t t = item % a.T_padded, row = item / a.T_padded, b = row / a.Hv, h = row % a.Hv;
  const int64_t hk = h / (a.Hv / a.Hk);
  float *q_out = a.q_out + item * a.dk, *k_out = a.k_out + item * a.dk, *v_out = a.v_out + item * a.dv;
  if (t >= a.T) {  // padding to the chunk multiple
    for (int64_t i = lane; i < a.dk; i += 32) q_out[i] = k_out[i] = 0.f;
    for (int64_t i = lane; i < a.dv; i += 32) v_out[i] = 0.f;
    if (lane == 0) a.g_out[item] = a.beta_out[item] = 0.f;
    return;
  }
  const T* q = static_cast<const T*>(a.q.data) + b * a.q.sb + t * a.q.st + hk * a.q.sh;
  const T* k = static_cast<const T*>(a.k.data) + b * a.k.sb + t * a.k.st + hk * a.k.sh;
  const T* v = static_cast<const T*>(a.v.data) + b * a.v.sb + t * a.v.st + h * a.v.sh;
  normalized_row(q, a.dk, a.q_scale, a.eps, q_out, lane);
  normalized_row(k, a.dk, 1.f, a.eps, k_out, lane);
  for (int64_t i = lane; i < a.dv; i += 32) v_out[i] = to_float(v[i]);
  if (lane == 0) {
    a.g_out[item] = static_cast<const float*>(a.g.data)[b * a.g.sb + t * a.g.st + h * a.g.sh];
    a.beta_out[item] = static_cast<const float*>(a.beta.data)[b * a.beta.sb + t * a.beta.st + h * a.beta.sh];
  }
}

}  // namespace

#ifndef MUSACODER_CUDA_EMULATION
int layout_inputs(const LayoutArgs& a, Stream stream) {
  if (a.Hk < 1 || a.Hv % a.Hk != 0 || a.T_padded < a.T || a.dk < 1 || a.dv < 1) return cudaErrorInvalidValue;
  const int64_t threads = a.B * a.Hv * a.T_padded * 32;
  if (threads == 0) return 0;
  const auto blocks = static_cast<unsigned>((threads + kLayoutThreads - 1) / kLayoutThreads);
  return launch_by_dtype(a.dtype, [&](auto tag) {
    layout_kernel<typename decltype(tag)::type><<<blocks, kLayoutThreads, 0, stream>>>(a);
  });
}
#endif  // MUSACODER_CUDA_EMULATION

}  // namespace musacoder::model::cuda
