// Qwen35: the Qwen3.5 / Qwen3.6 hybrid causal LM (MusaCoder-9B/27B's architecture), transformers'
// Qwen3_5ForCausalLM / the text half of Qwen3_5ForConditionalGeneration.
//
//   h = embed(ids)
//   per layer l:  h += mixer_l(norm(h));  h += mlp(norm(h))          norm: zero-centred RMSNorm x̂·(1+w)
//     mixer_l = GatedDeltaNet (model/gated_deltanet.h) where layer_types[l] == linear_attention,
//               else GatedAttention: q_proj doubled into (query, gate) per head, q/k RMSNorm(1+w) per head,
//               RoPE on the first head_dim·partial_rotary_factor dims, GQA, out · sigmoid(gate) -> o_proj
//   logits = lm_head(norm(h))    (lm_head = embed when tie_word_embeddings)
//
// named_parameters() are the text-only Hugging Face names ("model.layers.3.linear_attn.A_log", ...,
// "lm_head.weight"); checkpoint I/O maps them to "model.language_model.*" for the VLM-wrapped naming
// (model/checkpoint.h).
//
// Incremental decoding: a HybridCache holds, per layer, either the KV cache of a full-attention layer or
// the LinearAttentionState (conv + recurrent state) of a Gated DeltaNet layer; forward_step() appends
// tokens to every row. A generation engine with a paged KV cache drives the layers itself instead:
// GatedAttention::project() gives the roped q/k/v and the gate for its own attention, finish() applies
// the gate and o_proj; GatedDeltaNet::forward_step() takes that layer's per-row LinearAttentionState.
// Thread-safety: like any torch module; concurrent forwards only under NoGradGuard with distinct caches.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "model/causal_lm.h"
#include "model/config.h"
#include "model/gated_deltanet.h"
#include "model/rope.h"

namespace musacoder::model {

// Zero-centred RMSNorm (Qwen3_5RMSNorm): (x̂ in float32) · (1 + w), cast back to x's dtype. w starts at 0.
class ZeroCenteredRMSNormImpl : public torch::nn::Module {
 public:
  ZeroCenteredRMSNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);  // x: (..., dim)
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(ZeroCenteredRMSNorm);

class GatedAttentionImpl : public torch::nn::Module {
 public:
  explicit GatedAttentionImpl(const ModelConfig& c);

  struct Projected {
    torch::Tensor q;     // (B, H, T, D), normed and roped
    torch::Tensor k, v;  // (B, Hkv, T, D), k normed and roped
    torch::Tensor gate;  // (B, T, H·D), pre-sigmoid
  };
  // x (B, T, C); cos/sin (B, T, rotary_dim).
  Projected project(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
  // attn (B, H, T, D): the attention output -> (B, T, C).
  torch::Tensor finish(const torch::Tensor& attn, const torch::Tensor& gate);

  // As Decoder's attention: mask undefined (causal) or bool (B, 1, T, S); with a cache (non-null),
  // keys/values go to [offset, offset + T) and attention covers [0, offset + T).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask, torch::Tensor* k_cache, torch::Tensor* v_cache,
                        int64_t offset);

  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  ZeroCenteredRMSNorm q_norm{nullptr}, k_norm{nullptr};

 private:
  int64_t heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(GatedAttention);

class Qwen35MlpImpl : public torch::nn::Module {
 public:
  explicit Qwen35MlpImpl(const ModelConfig& c);
  torch::Tensor forward(const torch::Tensor& x);  // down(silu(gate(x)) * up(x))
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
  bool fused = false;  // model/swiglu.h's fused product (CUDA); the trainers' forward sets it
};
TORCH_MODULE(Qwen35Mlp);

// Exactly one of linear_attn / self_attn is set, per config.layer_types.
class Qwen35LayerImpl : public torch::nn::Module {
 public:
  Qwen35LayerImpl(const ModelConfig& c, int64_t index);
  bool is_linear() const { return !linear_attn.is_empty(); }
  GatedDeltaNet linear_attn{nullptr};
  GatedAttention self_attn{nullptr};
  Qwen35Mlp mlp{nullptr};
  ZeroCenteredRMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(Qwen35Layer);

class Qwen35BackboneImpl : public torch::nn::Module {  // the "model." prefix
 public:
  explicit Qwen35BackboneImpl(const ModelConfig& c);
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers;
  ZeroCenteredRMSNorm norm{nullptr};
};
TORCH_MODULE(Qwen35Backbone);

// Incremental state for `B` rows, all at the same length: per layer index l, k[l]/v[l]
// (B, Hkv, capacity, D) for full-attention layers (undefined for linear ones) and linear[l] for Gated
// DeltaNet layers (undefined tensors for attention ones).
struct HybridCache {
  std::vector<torch::Tensor> k, v;
  std::vector<LinearAttentionState> linear;
  int64_t length = 0;
  int64_t capacity = 0;
};

class Qwen35Impl : public torch::nn::Module, public CausalLm {
 public:
  // Parameters on CPU in float32 with torch's default init (norm weights 0); load weights or move after.
  explicit Qwen35Impl(const ModelConfig& c);

  const ModelConfig& config() const override { return config_; }
  // Logits (B, T, vocab) / final-normed hidden states (B, T, C): as Decoder (same ForwardInput contract;
  // packed sequences restart the conv and the delta-rule state, and attention stays within a sequence).
  torch::Tensor forward(const ForwardInput& in) override;
  torch::Tensor forward_hidden(const ForwardInput& in) override;
  torch::Tensor output_weight() const override;
  torch::nn::Module& module() override { return *this; }

  HybridCache new_cache(int64_t batch, int64_t capacity) const;
  // Appends input_ids (B, T) to every row and returns their logits (B, T, vocab). Requires
  // cache.length + T <= cache.capacity and B equal to the cache's batch.
  torch::Tensor forward_step(const torch::Tensor& input_ids, HybridCache& cache);

  // RoPE cos/sin (B, T, rotary_dim) for position_ids (B, T).
  std::pair<torch::Tensor, torch::Tensor> rotary(const torch::Tensor& position_ids, torch::ScalarType dtype) const;
  Qwen35Layer layer(int64_t i) const { return Qwen35Layer(model->layers->ptr<Qwen35LayerImpl>(static_cast<std::size_t>(i))); }

  // Tensors of the source checkpoint that this text model does not use (model.visual.*, mtp.*), kept
  // as loaded (memory-mapped) and written back unchanged by save, so a fine-tuned checkpoint stays a
  // complete Qwen3_5ForConditionalGeneration.
  std::vector<std::pair<std::string, torch::Tensor>> passthrough;

  Qwen35Backbone model{nullptr};
  torch::nn::Linear lm_head{nullptr};  // null when tie_word_embeddings

 private:
  void check_ids(const torch::Tensor& ids) const;
  ModelConfig config_;
  RotaryEmbedding rope_;
};
TORCH_MODULE(Qwen35);

}  // namespace musacoder::model
