// Internal to src/model: the CUDA implementation behind model/delta_rule.h's functions for CUDA tensors
// (kernels in model/cuda/). Built only with MUSACODER_HAVE_CUDA_KERNELS (see src/model/CMakeLists.txt).
#pragma once

#include <ATen/ATen.h>

namespace musacoder::model::detail {

// Whether the kernels take this shape (float32 inputs on CUDA, dk and dv multiples of 16 up to 128,
// the 64-token chunk).
bool cuda_delta_rule_supports(const at::Tensor& q, const at::Tensor& v, int64_t chunk_size);

// The chunked scan of delta_rule.cpp on CUDA, differentiable (custom autograd: chunked forward, recurrent
// backward over chunk checkpoints). q (already scaled by dk^-1/2), k: (B, H, L, dk); v: (B, H, L, dv);
// g, beta: (B, H, L), L a multiple of 64, float32; state (B, H, dk, dv); reset (B, L / 64) bool or
// undefined. Returns out (B, H, L, dv) and the final state.
std::pair<at::Tensor, at::Tensor> cuda_chunk_scan(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                  const at::Tensor& g, const at::Tensor& beta,
                                                  const at::Tensor& state, const at::Tensor& reset);

// Whether cuda_chunk_forward takes these inputs: q, k, v on one CUDA device, of one floating dtype, the
// shapes cuda_delta_rule_supports takes.
bool cuda_fused_layout_supports(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                int64_t chunk_size);

// chunk_gated_delta_rule's forward without gradients, from the model's layout: q, k (B, T, Hk, dk), v
// (B, T, Hv, dv), g, beta (B, T, Hv), initial (B, Hv, dk, dv) or undefined. The repeat of q/k heads, the
// L2 norms, the scaling, the layout change and the padding to the chunk multiple in one kernel
// (cuda::layout_inputs), then the chunked kernels. Returns out (B, Hv, L, dv) float32, L = T rounded up to
// the chunk, and the final state.
std::pair<at::Tensor, at::Tensor> cuda_chunk_forward(const at::Tensor& q, const at::Tensor& k,
                                                     const at::Tensor& v, const at::Tensor& g,
                                                     const at::Tensor& beta, const at::Tensor& initial);

// One decode token: q (scaled), k: (B, H, 1, dk); v (B, H, 1, dv); g, beta (B, H, 1); state (B, H, dk, dv)
// float32, updated in place (a copy when it is not contiguous). Not differentiable. Returns (out, state).
std::pair<at::Tensor, at::Tensor> cuda_recurrent_step(const at::Tensor& q, const at::Tensor& k,
                                                      const at::Tensor& v, const at::Tensor& g,
                                                      const at::Tensor& beta, at::Tensor state);

}  // namespace musacoder::model::detail
