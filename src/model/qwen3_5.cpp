#include "model/qwen3_5.h"

#include <cmath>

#include "model/decoder.h"  // packed_causal_mask, packed_position_ids, grouped_sdpa
#include "model/swiglu.h"

namespace musacoder::model {
namespace {

torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

int64_t rotary_dim(const ModelConfig& c) {
  return static_cast<int64_t>(static_cast<double>(c.head_dim) * c.rope.partial_rotary_factor);
}

// RotaryEmbedding over the rotated dims only (transformers computes the frequencies with dim = rotary_dim).
ModelConfig rotary_config(const ModelConfig& c) {
  ModelConfig r = c;
  r.head_dim = rotary_dim(c);
  return r;
}

// RoPE on the first cos.size(-1) dims of x (B, H, T, D); the rest passes through.
torch::Tensor apply_partial_rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t rot = cos.size(-1), D = x.size(-1);
  if (rot == D) return apply_rotary(x, cos, sin);
  return torch::cat({apply_rotary(x.narrow(-1, 0, rot), cos, sin), x.narrow(-1, rot, D - rot)}, -1);
}

}  // namespace

ZeroCenteredRMSNormImpl::ZeroCenteredRMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::zeros({dim}));
}

torch::Tensor ZeroCenteredRMSNormImpl::forward(const torch::Tensor& x) {
  torch::Tensor h = x.to(torch::kFloat);
  h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return (h * (1.0 + weight.to(torch::kFloat))).to(x.scalar_type());
}

GatedAttentionImpl::GatedAttentionImpl(const ModelConfig& c)
    : heads_(c.num_attention_heads), kv_heads_(c.num_key_value_heads), head_dim_(c.head_dim) {
  q_proj = register_module("q_proj", linear(c.hidden_size, heads_ * head_dim_ * 2, c.attention_bias));
  k_proj = register_module("k_proj", linear(c.hidden_size, kv_heads_ * head_dim_, c.attention_bias));
  v_proj = register_module("v_proj", linear(c.hidden_size, kv_heads_ * head_dim_, c.attention_bias));
  o_proj = register_module("o_proj", linear(heads_ * head_dim_, c.hidden_size, c.attention_bias));
  q_norm = register_module("q_norm", ZeroCenteredRMSNorm(head_dim_, c.rms_norm_eps));
  k_norm = register_module("k_norm", ZeroCenteredRMSNorm(head_dim_, c.rms_norm_eps));
}

GatedAttentionImpl::Projected GatedAttentionImpl::project(const torch::Tensor& x, const torch::Tensor& cos,
                                                          const torch::Tensor& sin) {
  const int64_t B = x.size(0), T = x.size(1);
  // Per head, q_proj's output is [query (D) | gate (D)].
  torch::Tensor qg = q_proj(x).view({B, T, heads_, 2 * head_dim_});
  Projected p;
  p.gate = qg.narrow(-1, head_dim_, head_dim_).reshape({B, T, heads_ * head_dim_});
  torch::Tensor q = q_norm(qg.narrow(-1, 0, head_dim_)).transpose(1, 2);
  torch::Tensor k = k_norm(k_proj(x).view({B, T, kv_heads_, head_dim_})).transpose(1, 2);
  p.v = v_proj(x).view({B, T, kv_heads_, head_dim_}).transpose(1, 2);
  p.q = apply_partial_rotary(q, cos, sin);
  p.k = apply_partial_rotary(k, cos, sin);
  return p;
}

torch::Tensor GatedAttentionImpl::finish(const torch::Tensor& attn, const torch::Tensor& gate) {
  const int64_t B = attn.size(0), T = attn.size(2);
  torch::Tensor out = attn.transpose(1, 2).reshape({B, T, heads_ * head_dim_});
  return o_proj(out * torch::sigmoid(gate));
}

torch::Tensor GatedAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                          const torch::Tensor& sin, const torch::Tensor& mask,
                                          torch::Tensor* k_cache, torch::Tensor* v_cache, int64_t offset) {
  const int64_t T = x.size(1);
  Projected p = project(x, cos, sin);
  torch::Tensor k = p.k, v = p.v;
  bool causal = !mask.defined();
  if (k_cache != nullptr) {
    k_cache->narrow(2, offset, T).copy_(k);
    v_cache->narrow(2, offset, T).copy_(v);
    k = k_cache->narrow(2, 0, offset + T);
    v = v_cache->narrow(2, 0, offset + T);
    causal = causal && offset == 0 && T > 1;  // is_causal aligns top-left: right only when square
  }
  torch::Tensor out = grouped_sdpa(p.q, k, v, mask, causal, 1.0 / std::sqrt(static_cast<double>(head_dim_)));
  return finish(out, p.gate);
}

Qwen35MlpImpl::Qwen35MlpImpl(const ModelConfig& c) {
  gate_proj = register_module("gate_proj", linear(c.hidden_size, c.intermediate_size, false));
  up_proj = register_module("up_proj", linear(c.hidden_size, c.intermediate_size, false));
  down_proj = register_module("down_proj", linear(c.intermediate_size, c.hidden_size, false));
}

torch::Tensor Qwen35MlpImpl::forward(const torch::Tensor& x) {
  return down_proj(swiglu(gate_proj(x), up_proj(x), fused));
}

Qwen35LayerImpl::Qwen35LayerImpl(const ModelConfig& c, int64_t index) {
  if (is_linear_attention_layer(c, index)) {
    linear_attn = register_module("linear_attn", GatedDeltaNet(c));
  } else {
    self_attn = register_module("self_attn", GatedAttention(c));
  }
  mlp = register_module("mlp", Qwen35Mlp(c));
  input_layernorm = register_module("input_layernorm", ZeroCenteredRMSNorm(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm =
      register_module("post_attention_layernorm", ZeroCenteredRMSNorm(c.hidden_size, c.rms_norm_eps));
}

Qwen35BackboneImpl::Qwen35BackboneImpl(const ModelConfig& c) {
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layers->push_back(Qwen35Layer(c, i));
  norm = register_module("norm", ZeroCenteredRMSNorm(c.hidden_size, c.rms_norm_eps));
}

Qwen35Impl::Qwen35Impl(const ModelConfig& c) : config_(c), rope_(rotary_config(c)) {
  TORCH_CHECK(c.architecture == Architecture::kQwen35, "Qwen35: config is ", architecture_name(c.architecture),
              ", not qwen3_5 (use Decoder)");
  model = register_module("model", Qwen35Backbone(c));
  if (!c.tie_word_embeddings)
    lm_head = register_module("lm_head", linear(c.hidden_size, c.vocab_size, false));
}

torch::Tensor Qwen35Impl::output_weight() const {
  return lm_head ? lm_head->weight : model->embed_tokens->weight;
}

std::pair<torch::Tensor, torch::Tensor> Qwen35Impl::rotary(const torch::Tensor& position_ids,
                                                           torch::ScalarType dtype) const {
  return rope_.cos_sin(position_ids, dtype);
}

void Qwen35Impl::check_ids(const torch::Tensor& ids) const {
  TORCH_CHECK(ids.defined() && ids.dim() == 2, "input_ids must be (B, T)");
  TORCH_CHECK(ids.scalar_type() == torch::kLong, "input_ids must be int64");
  TORCH_CHECK(ids.size(1) > 0, "input_ids must hold at least one token");
  TORCH_CHECK(ids.device() == model->embed_tokens->weight.device(), "input_ids must be on the model's device");
  TORCH_CHECK(ids.min().item<int64_t>() >= 0 && ids.max().item<int64_t>() < config_.vocab_size,
              "input_ids outside [0, vocab_size=", config_.vocab_size, ")");
}

torch::Tensor Qwen35Impl::forward_hidden(const ForwardInput& in) {
  check_ids(in.input_ids);
  const auto shape = in.input_ids.sizes();
  const auto device = in.input_ids.device();
  torch::Tensor mask, seq, positions = in.position_ids;
  if (in.sequence_ids.defined()) {
    TORCH_CHECK(in.sequence_ids.sizes() == shape, "sequence_ids must have input_ids' shape");
    seq = in.sequence_ids.to(device);
    mask = packed_attention_mask(seq, output_weight().scalar_type());
    if (!positions.defined()) positions = packed_position_ids(seq);
  }
  if (!positions.defined()) {
    positions = torch::arange(shape[1], in.input_ids.options()).unsqueeze(0).expand({shape[0], shape[1]});
  }
  TORCH_CHECK(positions.sizes() == shape, "position_ids must have input_ids' shape");
  TORCH_CHECK(positions.min().item<int64_t>() >= 0, "position_ids must be non-negative");
  torch::Tensor h = model->embed_tokens(in.input_ids);
  auto [cos, sin] = rope_.cos_sin(positions.to(device), h.scalar_type());
  for (std::size_t i = 0; i < model->layers->size(); ++i) {
    auto layer = model->layers->ptr<Qwen35LayerImpl>(i);
    torch::Tensor x = layer->input_layernorm(h);
    h = h + (layer->is_linear() ? layer->linear_attn(x, seq)
                                : layer->self_attn(x, cos, sin, mask, nullptr, nullptr, 0));
    h = h + layer->mlp(layer->post_attention_layernorm(h));
  }
  return model->norm(h);
}

torch::Tensor Qwen35Impl::forward(const ForwardInput& in) {
  return torch::nn::functional::linear(forward_hidden(in), output_weight());
}

HybridCache Qwen35Impl::new_cache(int64_t batch, int64_t capacity) const {
  TORCH_CHECK(batch > 0 && capacity > 0, "cache batch and capacity must be positive");
  HybridCache cache;
  cache.capacity = capacity;
  auto opts = model->embed_tokens->weight.options().requires_grad(false);
  for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    auto layer = model->layers->ptr<Qwen35LayerImpl>(static_cast<std::size_t>(i));
    if (layer->is_linear()) {
      cache.k.emplace_back();
      cache.v.emplace_back();
      cache.linear.push_back(layer->linear_attn->new_state(batch));
    } else {
      auto kv = [&] { return torch::zeros({batch, config_.num_key_value_heads, capacity, config_.head_dim}, opts); };
      cache.k.push_back(kv());
      cache.v.push_back(kv());
      cache.linear.emplace_back();
    }
  }
  return cache;
}

torch::Tensor Qwen35Impl::forward_step(const torch::Tensor& input_ids, HybridCache& cache) {
  check_ids(input_ids);
  const int64_t B = input_ids.size(0), T = input_ids.size(1), L = cache.length;
  TORCH_CHECK(cache.linear.size() == model->layers->size(), "cache was made for another model");
  TORCH_CHECK(L + T <= cache.capacity, "KV cache full: ", L, " + ", T, " > capacity ", cache.capacity);
  torch::Tensor positions = torch::arange(L, L + T, input_ids.options()).unsqueeze(0).expand({B, T});
  torch::Tensor mask;
  if (T > 1 && L > 0) {  // new token i (position L + i) sees [0, L + i]
    torch::Tensor k_pos = torch::arange(L + T, input_ids.options()).unsqueeze(0);
    mask = (k_pos <= positions.narrow(0, 0, 1).transpose(0, 1)).view({1, 1, T, L + T});
  }
  torch::Tensor h = model->embed_tokens(input_ids);
  auto [cos, sin] = rope_.cos_sin(positions, h.scalar_type());
  for (std::size_t i = 0; i < model->layers->size(); ++i) {
    auto layer = model->layers->ptr<Qwen35LayerImpl>(i);
    torch::Tensor x = layer->input_layernorm(h);
    if (layer->is_linear()) {
      h = h + layer->linear_attn->forward_step(x, cache.linear[i]);
    } else {
      TORCH_CHECK(cache.k[i].defined() && cache.k[i].size(0) == B, "cache was made for another batch size");
      h = h + layer->self_attn(x, cos, sin, mask, &cache.k[i], &cache.v[i], L);
    }
    h = h + layer->mlp(layer->post_attention_layernorm(h));
  }
  cache.length += T;
  return torch::nn::functional::linear(model->norm(h), output_weight());
}

}  // namespace musacoder::model
