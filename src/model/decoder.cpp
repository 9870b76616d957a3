#include "model/decoder.h"

#include <string>

#include "model/swiglu.h"

namespace musacoder::model {
namespace {

torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

}  // namespace

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  if (fused) return at::rms_norm(x, {x.size(-1)}, weight, eps_);
  torch::Tensor h = x.to(torch::kFloat);
  torch::Tensor variance = h.pow(2).mean(-1, /*keepdim=*/true);
  h = h * torch::rsqrt(variance + eps_);
  return weight * h.to(x.scalar_type());
}

AttentionImpl::AttentionImpl(const ModelConfig& c)
    : heads_(c.num_attention_heads), kv_heads_(c.num_key_value_heads), head_dim_(c.head_dim) {
  q_proj = register_module("q_proj", linear(c.hidden_size, heads_ * head_dim_, c.attention_bias));
  k_proj = register_module("k_proj", linear(c.hidden_size, kv_heads_ * head_dim_, c.attention_bias));
  v_proj = register_module("v_proj", linear(c.hidden_size, kv_heads_ * head_dim_, c.attention_bias));
  o_proj = register_module("o_proj", linear(heads_ * head_dim_, c.hidden_size, c.o_proj_bias));
  if (c.qk_norm) {
    q_norm = register_module("q_norm", RMSNorm(head_dim_, c.rms_norm_eps));
    k_norm = register_module("k_norm", RMSNorm(head_dim_, c.rms_norm_eps));
  }
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin, const torch::Tensor& mask,
                                     torch::Tensor* k_cache, torch::Tensor* v_cache, int64_t offset) {
  const int64_t B = x.size(0), T = x.size(1);
  // (B, T, H*D) -> (B, T, H, D); q/k norm acts per head, before the transpose to (B, H, T, D).
  torch::Tensor q = q_proj(x).view({B, T, heads_, head_dim_});
  torch::Tensor k = k_proj(x).view({B, T, kv_heads_, head_dim_});
  torch::Tensor v = v_proj(x).view({B, T, kv_heads_, head_dim_}).transpose(1, 2);
  if (q_norm) {
    q = q_norm(q);
    k = k_norm(k);
  }
  q = apply_rotary(q.transpose(1, 2), cos, sin);
  k = apply_rotary(k.transpose(1, 2), cos, sin);
  bool causal = !mask.defined();
  if (k_cache != nullptr) {
    k_cache->narrow(2, offset, T).copy_(k);
    v_cache->narrow(2, offset, T).copy_(v);
    k = k_cache->narrow(2, 0, offset + T);
    v = v_cache->narrow(2, 0, offset + T);
    // is_causal aligns to the top-left corner, so it is right only for a square score matrix.
    causal = causal && offset == 0 && T > 1;
  }
  torch::Tensor out = grouped_sdpa(q, k, v, mask, causal, 1.0 / std::sqrt(static_cast<double>(head_dim_)));
  return o_proj(out.transpose(1, 2).reshape({B, T, heads_ * head_dim_}));
}

MlpImpl::MlpImpl(const ModelConfig& c) {
  gate_proj = register_module("gate_proj", linear(c.hidden_size, c.intermediate_size, c.mlp_bias));
  up_proj = register_module("up_proj", linear(c.hidden_size, c.intermediate_size, c.mlp_bias));
  down_proj = register_module("down_proj", linear(c.intermediate_size, c.hidden_size, c.mlp_bias));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return down_proj(swiglu(gate_proj(x), up_proj(x), fused));
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& c) {
  self_attn = register_module("self_attn", Attention(c));
  mlp = register_module("mlp", Mlp(c));
  input_layernorm = register_module("input_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm =
      register_module("post_attention_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                        const torch::Tensor& sin, const torch::Tensor& mask,
                                        torch::Tensor* k_cache, torch::Tensor* v_cache, int64_t offset) {
  torch::Tensor h = x + self_attn(input_layernorm(x), cos, sin, mask, k_cache, v_cache, offset);
  return h + mlp(post_attention_layernorm(h));
}

BackboneImpl::BackboneImpl(const ModelConfig& c) {
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layers->push_back(DecoderLayer(c));
  norm = register_module("norm", RMSNorm(c.hidden_size, c.rms_norm_eps));
}

DecoderImpl::DecoderImpl(const ModelConfig& c) : config_(c), rope_(c) {
  TORCH_CHECK(c.architecture != Architecture::kQwen35,
              "Decoder: qwen3_5 is the hybrid architecture; build a Qwen35 (model/qwen3_5.h) or use load_model()");
  model = register_module("model", Backbone(c));
  if (!c.tie_word_embeddings)
    lm_head = register_module("lm_head", linear(c.hidden_size, c.vocab_size, false));
}

torch::Tensor DecoderImpl::output_weight() const {
  return lm_head ? lm_head->weight : model->embed_tokens->weight;
}

void DecoderImpl::check_ids(const torch::Tensor& ids) const {
  TORCH_CHECK(ids.defined() && ids.dim() == 2, "input_ids must be (B, T)");
  TORCH_CHECK(ids.scalar_type() == torch::kLong, "input_ids must be int64");
  TORCH_CHECK(ids.size(1) > 0, "input_ids must hold at least one token");
  TORCH_CHECK(ids.device() == model->embed_tokens->weight.device(),
              "input_ids must be on the model's device");
  TORCH_CHECK(ids.min().item<int64_t>() >= 0 && ids.max().item<int64_t>() < config_.vocab_size,
              "input_ids outside [0, vocab_size=", config_.vocab_size, ")");
}

torch::Tensor DecoderImpl::run_layers(torch::Tensor h, const torch::Tensor& position_ids,
                                      const torch::Tensor& mask, KVCache* cache) {
  auto [cos, sin] = rope_.cos_sin(position_ids, h.scalar_type());
  const int64_t offset = cache ? cache->length : 0;
  for (std::size_t i = 0; i < model->layers->size(); ++i) {
    auto layer = model->layers[i]->as<DecoderLayerImpl>();
    h = layer->forward(h, cos, sin, mask, cache ? &cache->k[i] : nullptr, cache ? &cache->v[i] : nullptr,
                       offset);
  }
  return model->norm(h);
}

torch::Tensor DecoderImpl::forward_hidden(const ForwardInput& in) {
  check_ids(in.input_ids);
  const auto shape = in.input_ids.sizes();
  torch::Tensor mask, positions = in.position_ids;
  if (in.sequence_ids.defined()) {
    TORCH_CHECK(in.sequence_ids.sizes() == shape, "sequence_ids must have input_ids' shape");
    mask = packed_causal_mask(in.sequence_ids.to(in.input_ids.device()));
    if (!positions.defined()) positions = packed_position_ids(in.sequence_ids.to(in.input_ids.device()));
  }
  if (!positions.defined()) {
    positions = torch::arange(shape[1], in.input_ids.options()).unsqueeze(0).expand({shape[0], shape[1]});
  }
  TORCH_CHECK(positions.sizes() == shape, "position_ids must have input_ids' shape");
  TORCH_CHECK(positions.min().item<int64_t>() >= 0, "position_ids must be non-negative");
  return run_layers(model->embed_tokens(in.input_ids), positions.to(in.input_ids.device()), mask, nullptr);
}

torch::Tensor DecoderImpl::forward(const ForwardInput& in) {
  return torch::nn::functional::linear(forward_hidden(in), output_weight());
}

KVCache DecoderImpl::new_cache(int64_t batch, int64_t capacity) const {
  TORCH_CHECK(batch > 0 && capacity > 0, "cache batch and capacity must be positive");
  KVCache cache;
  cache.capacity = capacity;
  auto opts = model->embed_tokens->weight.options().requires_grad(false);
  for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    cache.k.push_back(torch::zeros({batch, config_.num_key_value_heads, capacity, config_.head_dim}, opts));
    cache.v.push_back(torch::zeros({batch, config_.num_key_value_heads, capacity, config_.head_dim}, opts));
  }
  return cache;
}

torch::Tensor DecoderImpl::forward_step(const torch::Tensor& input_ids, KVCache& cache) {
  check_ids(input_ids);
  const int64_t B = input_ids.size(0), T = input_ids.size(1);
  TORCH_CHECK(!cache.k.empty() && cache.k[0].size(0) == B, "cache was made for another batch size");
  TORCH_CHECK(cache.length + T <= cache.capacity, "KV cache full: ", cache.length, " + ", T, " > capacity ",
              cache.capacity);
  torch::Tensor positions =
      torch::arange(cache.length, cache.length + T, input_ids.options()).unsqueeze(0).expand({B, T});
  torch::Tensor mask;
  if (T > 1 && cache.length > 0) {
    // New token i (absolute position length + i) sees cached positions and new ones up to itself: (1,1,T,S).
    torch::Tensor q_pos = torch::arange(cache.length, cache.length + T, input_ids.options()).unsqueeze(1);
    torch::Tensor k_pos = torch::arange(cache.length + T, input_ids.options()).unsqueeze(0);
    mask = (k_pos <= q_pos).view({1, 1, T, cache.length + T});
  }
  torch::Tensor h = run_layers(model->embed_tokens(input_ids), positions, mask, &cache);
  cache.length += T;
  return torch::nn::functional::linear(h, output_weight());
}

void init_like_transformers(Decoder& m, uint64_t seed, double initializer_range) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (auto& p : m->named_parameters()) {
    const std::string& name = p.key();
    if (name.find("norm") != std::string::npos)
      p.value().fill_(1.0);
    else if (name.ends_with(".bias"))
      p.value().zero_();
    else
      p.value().normal_(0.0, initializer_range);
  }
}

torch::Tensor grouped_sdpa(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const torch::Tensor& mask, bool causal, double scale) {
  if (mask.defined() && mask.scalar_type() == torch::kInt) return packed_sdpa(q, k, v, mask, scale);
  const int64_t groups = q.size(1) / k.size(1);
  const std::optional<torch::Tensor> m = mask.defined() ? std::optional<torch::Tensor>(mask) : std::nullopt;
  const bool flash_can_group = !mask.defined() && q.scalar_type() != torch::kFloat;
  if (groups == 1 || !q.is_cuda() || flash_can_group) {
    return at::scaled_dot_product_attention(q, k, v, m, /*dropout_p=*/0.0, causal, scale,
                                            /*enable_gqa=*/groups > 1);
  }
  const torch::Tensor k_all = k.repeat_interleave(groups, 1), v_all = v.repeat_interleave(groups, 1);
  return at::scaled_dot_product_attention(q, k_all, v_all, m, /*dropout_p=*/0.0, causal, scale);
}

}  // namespace musacoder::model
