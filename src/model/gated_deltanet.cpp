#include "model/gated_deltanet.h"

#include "model/delta_rule.h"

namespace musacoder::model {
namespace {

namespace F = torch::nn::functional;

torch::nn::Linear linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

}  // namespace

GatedDeltaNetImpl::GatedDeltaNetImpl(const ModelConfig& c)
    : hk_(c.linear.num_key_heads),
      hv_(c.linear.num_value_heads),
      dk_(c.linear.key_head_dim),
      dv_(c.linear.value_head_dim),
      key_dim_(hk_ * dk_),
      value_dim_(hv_ * dv_),
      kernel_(c.linear.conv_kernel_dim),
      eps_(c.rms_norm_eps) {
  // Registration order follows transformers' state dict (conv1d, dt_bias, A_log, norm, out_proj, in_proj_*).
  conv1d = register_module(
      "conv1d", torch::nn::Conv1d(torch::nn::Conv1dOptions(conv_dim(), conv_dim(), kernel_).groups(conv_dim()).bias(false)));
  dt_bias = register_parameter("dt_bias", torch::ones({hv_}));
  A_log = register_parameter("A_log", torch::empty({hv_}).uniform_(0.01, 16).log_());
  norm = register_module("norm", RMSNormGated(dv_, eps_));
  out_proj = register_module("out_proj", linear(value_dim_, c.hidden_size));
  in_proj_qkv = register_module("in_proj_qkv", linear(c.hidden_size, conv_dim()));
  in_proj_z = register_module("in_proj_z", linear(c.hidden_size, value_dim_));
  in_proj_b = register_module("in_proj_b", linear(c.hidden_size, hv_));
  in_proj_a = register_module("in_proj_a", linear(c.hidden_size, hv_));
}

torch::Tensor causal_conv1d_silu(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& sequence_ids) {
  const int64_t T = x.size(2), K = weight.size(2);
  if (!sequence_ids.defined()) {
    torch::Tensor out = F::conv1d(x.to(weight.scalar_type()),
                                  weight, F::Conv1dFuncOptions().padding(K - 1).groups(x.size(1)));
    return torch::silu(out.narrow(2, 0, T)).to(x.scalar_type());
  }
  // Packed: out[t] = Σ_j w[K−1−j] · x[t−j] over the j whose t−j lies in t's sequence.
  torch::Tensor xs = x.to(weight.scalar_type());
  torch::Tensor out = xs * weight.select(2, K - 1).unsqueeze(0);  // (B, C, T) * (1, C, 1)
  for (int64_t j = 1; j < K && j < T; ++j) {
    torch::Tensor shifted = F::pad(xs, F::PadFuncOptions({j, 0})).narrow(2, 0, T);
    torch::Tensor same = (sequence_ids == F::pad(sequence_ids, F::PadFuncOptions({j, 0}).value(-1)).narrow(1, 0, T));
    out = out + shifted * weight.select(2, K - 1 - j).unsqueeze(0) * same.unsqueeze(1).to(xs.scalar_type());
  }
  return torch::silu(out).to(x.scalar_type());
}

RMSNormGatedImpl::RMSNormGatedImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormGatedImpl::forward(const torch::Tensor& x, const torch::Tensor& gate) {
  torch::Tensor h = x.to(torch::kFloat);
  h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  h = weight * h.to(x.scalar_type());
  return (h * torch::silu(gate.to(torch::kFloat))).to(x.scalar_type());
}

torch::Tensor GatedDeltaNetImpl::mix(const torch::Tensor& x, const torch::Tensor& qkv,
                                     const torch::Tensor& sequence_ids, LinearAttentionState* state) {
  const int64_t B = x.size(0), T = x.size(1);
  torch::Tensor q = qkv.narrow(-1, 0, key_dim_).reshape({B, T, hk_, dk_});
  torch::Tensor k = qkv.narrow(-1, key_dim_, key_dim_).reshape({B, T, hk_, dk_});
  torch::Tensor v = qkv.narrow(-1, 2 * key_dim_, value_dim_).reshape({B, T, hv_, dv_});
  torch::Tensor beta = torch::sigmoid(in_proj_b(x));
  torch::Tensor g = -A_log.to(torch::kFloat).exp() * F::softplus(in_proj_a(x).to(torch::kFloat) + dt_bias);
  DeltaRuleOutput r;
  if (state == nullptr) {
    r = chunk_gated_delta_rule(q, k, v, g, beta, {}, sequence_ids);
  } else if (T == 1) {
    r = recurrent_gated_delta_rule(q, k, v, g, beta, state->recurrent);
  } else {
    r = chunk_gated_delta_rule(q, k, v, g, beta, state->recurrent);
  }
  if (state != nullptr) state->recurrent = r.final_state;
  torch::Tensor z = in_proj_z(x).reshape({-1, dv_});
  torch::Tensor o = norm(r.out.reshape({-1, dv_}), z);
  return out_proj(o.reshape({B, T, value_dim_}));
}

torch::Tensor GatedDeltaNetImpl::forward(const torch::Tensor& x, const torch::Tensor& sequence_ids) {
  torch::Tensor qkv = causal_conv1d_silu(in_proj_qkv(x).transpose(1, 2), conv1d->weight, sequence_ids);
  return mix(x, qkv.transpose(1, 2), sequence_ids, nullptr);
}

torch::Tensor GatedDeltaNetImpl::forward_step(const torch::Tensor& x, LinearAttentionState& state) {
  TORCH_CHECK(state.conv.defined() && state.conv.size(0) == x.size(0) && state.recurrent.defined(),
              "GatedDeltaNet::forward_step: state was made for another batch size (or not made)");
  const int64_t T = x.size(1);
  // The conv continues from the stored last K − 1 inputs: no padding needed.
  torch::Tensor ext = torch::cat({state.conv, in_proj_qkv(x).transpose(1, 2).to(state.conv.scalar_type())}, 2);
  state.conv = ext.narrow(2, ext.size(2) - (kernel_ - 1), kernel_ - 1).contiguous();
  torch::Tensor qkv = F::conv1d(ext.to(conv1d->weight.scalar_type()), conv1d->weight,
                                F::Conv1dFuncOptions().groups(conv_dim()));
  qkv = torch::silu(qkv.narrow(2, qkv.size(2) - T, T)).to(x.scalar_type());
  return mix(x, qkv.transpose(1, 2), {}, &state);
}

LinearAttentionState GatedDeltaNetImpl::new_state(int64_t batch) const {
  TORCH_CHECK(batch > 0, "GatedDeltaNet::new_state: batch must be positive");
  auto opts = conv1d->weight.options().requires_grad(false);
  return {torch::zeros({batch, conv_dim(), kernel_ - 1}, opts),
          torch::zeros({batch, hv_, dk_, dv_}, opts.dtype(torch::kFloat))};
}

}  // namespace musacoder::model
