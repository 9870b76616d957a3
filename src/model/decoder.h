// Decoder: the Qwen2 / Qwen3 / Llama causal LM (RMSNorm, RoPE, grouped-query attention through
// at::scaled_dot_product_attention, SwiGLU MLP), as a torch::nn::Module whose named_parameters() are
// exactly the Hugging Face tensor names ("model.layers.0.self_attn.q_proj.weight", ..., "lm_head.weight"
// unless embeddings are tied), so loading and saving are name-for-name.
//
// Two forwards:
//  - forward(): full sequences for training and scoring; optional position ids and packed sequences
//    (sequence_ids: tokens attend causally only to tokens of their own sequence).
//  - forward_step(): incremental decoding with a KVCache (prefill with many tokens, then one at a time).
// Thread-safety: like any torch module; concurrent forwards on one Decoder are safe only under
// torch::NoGradGuard with distinct caches.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "model/causal_lm.h"
#include "model/config.h"
#include "model/rope.h"

namespace musacoder::model {

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps);
  // x: (..., dim). Normalised in float32, cast back, then scaled (transformers' order). With `fused` set:
  // at::rms_norm (on CUDA one fused kernel forward and one backward, saving only the inverse RMS, where the
  // ops above run ~8 kernels each way and save float32 copies; float32 math with one rounding at the end, so
  // bf16/fp16 results may differ from transformers' by an ulp). The trainers' forward sets it on CUDA.
  torch::Tensor forward(const torch::Tensor& x);
  double eps() const { return eps_; }
  torch::Tensor weight;
  bool fused = false;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

// Per-layer keys and values, preallocated: k[l], v[l] are (B, num_key_value_heads, capacity, head_dim);
// positions [0, length) are filled. All rows of the batch share one length (no ragged batches).
struct KVCache {
  std::vector<torch::Tensor> k, v;
  int64_t length = 0;
  int64_t capacity = 0;
};

class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const ModelConfig& c);
  // x: (B, T, C); cos/sin: (B, T, D). mask: undefined (causal) or bool (B, 1, T, S) true = may attend.
  // With a cache (k_cache/v_cache non-null), new keys/values are written at [offset, offset + T) and
  // attention covers [0, offset + T).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask, torch::Tensor* k_cache, torch::Tensor* v_cache,
                        int64_t offset);
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  RMSNorm q_norm{nullptr}, k_norm{nullptr};  // Qwen3 only

 private:
  int64_t heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(Attention);

class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(const ModelConfig& c);
  torch::Tensor forward(const torch::Tensor& x);  // down(silu(gate(x)) * up(x))
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
  bool fused = false;  // model/swiglu.h's fused product (CUDA); the trainers' forward sets it
};
TORCH_MODULE(Mlp);

class DecoderLayerImpl : public torch::nn::Module {
 public:
  explicit DecoderLayerImpl(const ModelConfig& c);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask, torch::Tensor* k_cache, torch::Tensor* v_cache,
                        int64_t offset);
  Attention self_attn{nullptr};
  Mlp mlp{nullptr};
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(DecoderLayer);

// The "model." prefix of the HF names.
class BackboneImpl : public torch::nn::Module {
 public:
  explicit BackboneImpl(const ModelConfig& c);
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers;
  RMSNorm norm{nullptr};
};
TORCH_MODULE(Backbone);

class DecoderImpl : public torch::nn::Module, public CausalLm {
 public:
  // Parameters are allocated on CPU in float32 with torch's default init; load weights or move after.
  // Requires a dense architecture (qwen2, qwen3, llama): the Qwen3.5 hybrid is model/qwen3_5.h.
  explicit DecoderImpl(const ModelConfig& c);

  const ModelConfig& config() const override { return config_; }

  // Logits (B, T, vocab) in the parameters' dtype. Requires input_ids (B, T) int64 on the model's device
  // with ids < vocab_size (checked), and position_ids / sequence_ids, when given, of the same shape.
  torch::Tensor forward(const ForwardInput& in) override;
  // The final-normed hidden states (B, T, C), for losses that project in chunks.
  torch::Tensor forward_hidden(const ForwardInput& in) override;
  torch::nn::Module& module() override { return *this; }

  // A cache for `batch` rows and up to `capacity` positions, on the model's device and dtype.
  KVCache new_cache(int64_t batch, int64_t capacity) const;
  // Appends input_ids (B, T) at positions [cache.length, cache.length + T) and returns their logits
  // (B, T, vocab). Requires cache.length + T <= cache.capacity and B equal to the cache's batch.
  torch::Tensor forward_step(const torch::Tensor& input_ids, KVCache& cache);

  // lm_head weight: the embedding matrix when tied.
  torch::Tensor output_weight() const override;

  Backbone model{nullptr};
  torch::nn::Linear lm_head{nullptr};  // null when tie_word_embeddings

 private:
  void check_ids(const torch::Tensor& ids) const;
  torch::Tensor run_layers(torch::Tensor h, const torch::Tensor& position_ids, const torch::Tensor& mask,
                           KVCache* cache);
  ModelConfig config_;
  RotaryEmbedding rope_;
};
TORCH_MODULE(Decoder);

// Block-diagonal causal mask for packed sequences: (B, 1, T, T) bool, [b, 0, i, j] = j <= i and
// sequence_ids[b, i] == sequence_ids[b, j].
torch::Tensor packed_causal_mask(const torch::Tensor& sequence_ids);
// Positions restarting at 0 wherever sequence_ids changes along T: (B, T) int64.
torch::Tensor packed_position_ids(const torch::Tensor& sequence_ids);
// The same packing as cumulative run lengths over the flattened B·T tokens: int32 (n + 1) on sequence_ids'
// device, [0, end of run 1, ..., B·T], a run being a stretch of equal ids within a row (rows never share
// one). One device-to-host sync (the number of runs).
torch::Tensor packed_cu_seqlens(const torch::Tensor& sequence_ids);
// The attention mask of packed sequences in the form attention runs fastest with for this dtype and device:
// cu_seqlens (int32, varlen flash attention) on CUDA in float16/bfloat16, else the dense packed_causal_mask.
// Either form goes wherever a layer takes `mask` (grouped_sdpa tells them apart).
torch::Tensor packed_attention_mask(const torch::Tensor& sequence_ids, torch::ScalarType dtype);
// Attention of packed sequences given as cu_seqlens (q/k/v as in grouped_sdpa, S == T): PyTorch's varlen
// flash kernels on CUDA in float16/bfloat16 with head_dim a multiple of 8 up to 256 (no mask, no score
// matrix, kv heads grouped natively; backward through _flash_attention_backward), else the dense mask built
// from it.
// max_run: the longest run when the caller knows it (sizes the kernels' grid; 0: T).
torch::Tensor packed_sdpa(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          const torch::Tensor& cu_seqlens, double scale, int64_t max_run = 0);
// Whether packed_sdpa runs varlen flash attention for q (B, H, T, D) and k (B, Hkv, T, D) (else the dense
// mask).
bool packed_flash_usable(const torch::Tensor& q, const torch::Tensor& k);

// Scaled dot-product attention of q (B, H, T, D) over k, v (B, Hkv, S, D), Hkv dividing H (grouped-query
// heads). mask: undefined, (B or 1, 1, T, S) bool (true: attend), or int32 cu_seqlens of packed sequences
// (packed_cu_seqlens; causal within each run, via packed_sdpa). On CUDA, PyTorch's fused kernels take
// grouped heads (enable_gqa) only in flash attention (bf16/fp16, no mask); anything else falls back to the
// math backend, which keeps a (B, H, T, S) score matrix per layer for backward (30 GiB for a 135M model on
// two 4096-token packed rows). There k and v are repeated to the query heads instead (exact), so the
// memory-efficient kernel takes the mask.
torch::Tensor grouped_sdpa(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const torch::Tensor& mask, bool causal, double scale);

// Random weights as transformers' _init_weights makes them (torch::manual_seed(seed) first): norms 1, biases 0,
// every other tensor N(0, initializer_range²).
void init_like_transformers(Decoder& m, uint64_t seed, double initializer_range = 0.02);

}  // namespace musacoder::model
