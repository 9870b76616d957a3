// GatedDeltaNet: the linear-attention token mixer of the Qwen3.5/3.6 hybrid (three layers in four), as
// transformers' Qwen3_5GatedDeltaNet. Parameter names are the Hugging Face ones under ".linear_attn.":
//   in_proj_qkv (C -> 2·Hk·dk + Hv·dv), in_proj_z (C -> Hv·dv), in_proj_b, in_proj_a (C -> Hv),
//   conv1d.weight (conv_dim, 1, K), dt_bias (Hv), A_log (Hv), norm.weight (dv), out_proj (Hv·dv -> C).
// Per token:  qkv = silu(causal_depthwise_conv_K(in_proj_qkv(x)));  q, k, v = split(qkv);
//   β = σ(in_proj_b(x));  g = −exp(A_log) · softplus(in_proj_a(x) + dt_bias)   (float32);
//   o = gated_delta_rule(l2norm(q), l2norm(k), v, g, β)                          (model/delta_rule.h);
//   y = out_proj(rmsnorm(o) · norm.weight · silu(in_proj_z(x)))                  (per value head).
// Thread-safety: like any torch module.
#pragma once

#include <torch/torch.h>

#include "model/config.h"

namespace musacoder::model {

// The incremental state of one Gated DeltaNet layer for a batch of rows; row b is one sequence. The
// generation engine keeps one per linear layer and per sequence slot (e.g. pools of shape
// (slots, ...) indexed per step with index_select / index_copy_), beside the KV cache of the
// full-attention layers. Both tensors are updated in place-by-assignment by forward_step().
struct LinearAttentionState {
  torch::Tensor conv;       // (B, conv_dim, K − 1), model dtype: the last K − 1 inputs of the causal conv
  torch::Tensor recurrent;  // (B, Hv, dk, dv) float32: the delta-rule state S
};

// transformers' Qwen3_5RMSNormGated: rmsnorm(x) in float32, · weight in x's dtype, · silu(gate) in float32.
class RMSNormGatedImpl : public torch::nn::Module {
 public:
  RMSNormGatedImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& gate);  // x, gate: (..., dim)
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNormGated);

// A (B, T, C) hidden-state input's token mixing, full sequences or incremental.
class GatedDeltaNetImpl : public torch::nn::Module {
 public:
  explicit GatedDeltaNetImpl(const ModelConfig& c);

  // Training / scoring: x (B, T, C) -> (B, T, C), state starting at zero. sequence_ids (B, T) int64,
  // optional: packed sequences (the conv and the delta rule restart at each sequence).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& sequence_ids = {});

  // Incremental: x (B, T, C) continues the sequences whose state is `state` (from new_state() for a
  // fresh sequence). T = 1 uses the recurrent form, T > 1 the chunked one; both update `state`.
  torch::Tensor forward_step(const torch::Tensor& x, LinearAttentionState& state);

  // A zero state for `batch` rows on the parameters' device (conv in their dtype, recurrent float32).
  LinearAttentionState new_state(int64_t batch) const;

  int64_t conv_dim() const { return 2 * key_dim_ + value_dim_; }

  torch::nn::Linear in_proj_qkv{nullptr}, in_proj_z{nullptr}, in_proj_b{nullptr}, in_proj_a{nullptr};
  torch::nn::Linear out_proj{nullptr};
  torch::nn::Conv1d conv1d{nullptr};  // depthwise, weight (conv_dim, 1, K), no bias; run by hand (causal)
  RMSNormGated norm{nullptr};
  torch::Tensor dt_bias, A_log;

 private:
  // q, k, v (after conv) and the gates, then the delta rule and the gated norm + out_proj.
  torch::Tensor mix(const torch::Tensor& x, const torch::Tensor& qkv, const torch::Tensor& sequence_ids,
                    LinearAttentionState* state);
  int64_t hk_, hv_, dk_, dv_, key_dim_, value_dim_, kernel_;
  double eps_;
};
TORCH_MODULE(GatedDeltaNet);

// Causal depthwise conv (weight (C, 1, K)) + SiLU over x (B, C, T), each position seeing only earlier
// positions of its own sequence when sequence_ids (B, T) is given.
torch::Tensor causal_conv1d_silu(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& sequence_ids = {});

}  // namespace musacoder::model
