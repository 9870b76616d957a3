// The gated delta rule (Gated DeltaNet, Yang et al. 2024) — the token mixer of Qwen3.5's linear-attention
// layers — in plain libtorch. Per value head h, with q/k L2-normalised and q scaled by dk^-1/2:
//
//   S_t = exp(g_t) · S_{t-1} + k_t ⊗ β_t (v_t − exp(g_t) · S_{t-1}ᵀ k_t)      S ∈ R^{dk×dv}, S_0 = initial
//   o_t = S_tᵀ q_t
//
// Two algorithms with the same result (to rounding):
//  - chunk_gated_delta_rule(): the chunked (UT-transform) form for training and prefill, op for op
//    transformers' torch_chunk_gated_delta_rule (fp32 inside, linalg.solve_triangular per chunk);
//    differentiable through autograd. With `sequence_ids` (packed sequences) the state restarts at 0 at
//    every sequence start: each sequence is laid out from a chunk boundary, and the scan zeroes the state
//    before a chunk that starts a sequence (as varlen kernels do with cu_seqlens).
//  - recurrent_gated_delta_rule(): the token-by-token recurrence, transformers'
//    torch_recurrent_gated_delta_rule; the decode step (T = 1).
// Shapes (all tensors on one device; any float dtype, computed in float32):
//   q, k: (B, T, Hk, dk); v: (B, T, Hv, dv); g (log decay, <= 0), beta: (B, T, Hv); Hv a multiple of Hk
//   (q/k head i serves value heads i·Hv/Hk … (i+1)·Hv/Hk − 1).
//   initial_state / final_state: (B, Hv, dk, dv) float32. Output: (B, T, Hv, dv) in q's dtype.
// Thread-safety: pure functions.
#pragma once

#include <ATen/ATen.h>

namespace musacoder::model {

struct DeltaRuleOutput {
  at::Tensor out;          // (B, T, Hv, dv), q's dtype
  at::Tensor final_state;  // (B, Hv, dk, dv) float32; undefined for packed input
};

// transformers' default chunk size.
constexpr int64_t kDeltaRuleChunkSize = 64;

// `initial_state` may be undefined (zeros). `sequence_ids` (B, T) int64, optional: packed sequences
// (equal consecutive ids form one sequence); then initial_state must be undefined and no final state is
// returned.
DeltaRuleOutput chunk_gated_delta_rule(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                       const at::Tensor& g, const at::Tensor& beta,
                                       const at::Tensor& initial_state = {},
                                       const at::Tensor& sequence_ids = {},
                                       int64_t chunk_size = kDeltaRuleChunkSize);

DeltaRuleOutput recurrent_gated_delta_rule(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                           const at::Tensor& g, const at::Tensor& beta,
                                           const at::Tensor& initial_state = {});

// Whether this build has the CUDA kernels (src/model/cuda): then CUDA float inputs of a supported
// shape (dk ∈ {16, 32, 64, 128}, dv a multiple of 32 up to 128, chunk 64) run on them — the chunked form
// with a custom backward, and the decode step (T = 1, no gradient) fused — and everything else on the
// libtorch implementation.
bool delta_rule_cuda_kernels_built();

// x * rsqrt(sum(x², -1) + eps): the L2 normalisation of q and k (FLA's and transformers' form).
at::Tensor l2_normalize(const at::Tensor& x, double eps = 1e-6);

}  // namespace musacoder::model
