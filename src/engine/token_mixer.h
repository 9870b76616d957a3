// The per-layer seam of the model runner. A decoder layer is a pre-norm residual block
//     h += mixer(input_layernorm(h));  h += mlp(post_attention_layernorm(h))
// whose token mixer is the only part that touches per-sequence memory. The runner walks the layers and
// dispatches on each layer's TokenMixer:
//   AttentionMixer         (attention layers of Qwen2/Qwen3/Llama, and Qwen3.5's gated full attention)
//                          q/k/v projections, optional q/k norm, RoPE, write K/V into the pages, attend;
//   a linear-attention mixer  (Qwen3.5's Gated DeltaNet, to come) reads and writes its sequence's state
//                          slot: CachePool::state(layer)[i][ctx.seqs[s].state_slot] before and after the
//                          sequence's tokens ctx.seqs[s] (decodes: one token, prefill chunks: many, in order
//                          of position); CachePool::fork() has already copied the slot for prefix sharing.
// Its CachePool layer spec (LayerKind::kLinearAttention + state_shapes) is returned by cache_spec().
#pragma once

#include <torch/torch.h>

#include <vector>

#include "engine/cache.h"
#include "engine/fused_linear.h"
#include "model/decoder.h"

namespace musacoder::engine {

// The layout of one step's flattened tokens (N = all new tokens of all sequences), on the model's device
// unless noted. Decodes (one token after a cached context) come first, then prefill chunks.
struct StepContext {
  struct Seq {
    int64_t offset = 0, count = 0;  // rows [offset, offset + count) of the step's tokens
    int64_t cached = 0;             // positions already in the cache before this step
    int32_t state_slot = 0;         // linear-attention state slot
    torch::Tensor context_slots;    // prefills with cached > 0: flat KV slots of positions [0, cached+count)
  };
  std::vector<Seq> seqs;  // host
  int64_t num_decode = 0;
  torch::Tensor positions;     // (N) int64
  torch::Tensor slots;         // (N) int64: where each token's K/V goes
  torch::Tensor cos, sin;      // (N, head_dim) RoPE
  torch::Tensor block_tables;  // (num_decode, max_blocks) int32
  torch::Tensor context_lens;  // (num_decode) int32, including the new token
  int64_t max_context = 0;     // host: the largest of context_lens
  bool use_decode_kernel = true;
  bool fused_ops = false;  // the fused CUDA kernels for norms and RoPE (EngineOptions::fused_ops, on CUDA)
  // With fused_ops, a decode-only step of at most 4 rows (EngineOptions::decode_linear): projections may take
  // the norm or SiLU·mul before them into their kernel (decode_linear_cuda.h).
  bool decode_linear = false;
  // On CUDA, when the step's prefills (two or more) all start at position 0: int32 cumulative lengths of
  // their rows [0, c1, c1 + c2, ...] (they follow the decodes, in order) and the longest, so attention layers
  // can run them as one varlen call; undefined otherwise.
  torch::Tensor prefill_cu_seqlens;
  int64_t prefill_max_len = 0;
};

// The layer steps the mixers and the runner share: on the fused CUDA kernels when `fused`, else the modules'
// own ops (the reference). norm: h += delta in place (when delta is defined), then the RMSNorm of h.
torch::Tensor norm(model::RMSNorm& n, torch::Tensor& h, const torch::Tensor& delta, bool fused);
torch::Tensor rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, bool fused);

// A layer's input before its RMSNorm: the residual stream h, its pending update delta (or undefined) and the
// norm. The runner hands this to the mixer and the MLP rather than the normed rows, so that a projection can
// take the norm into its own kernel (ctx.decode_linear) instead of a norm kernel running first. Either way h
// ends as h + delta and the projection sees the normed rows.
struct LayerInput {
  torch::Tensor& h;
  const torch::Tensor& delta;
  model::RMSNorm& norm;
  const StepContext& ctx;
  // norm(h, delta, ctx.fused_ops): the normed rows.
  torch::Tensor normed() const;
  // normed() · weightᵀ + bias: one decode_linear kernel with the norm in it where it takes the weight
  // (ctx.decode_linear), else F.linear(normed(), ...).
  torch::Tensor linear(const torch::Tensor& weight, const torch::Tensor& bias) const;
  // linear's outputs for the normed rows: linear() of the fused weight, split, or the parts one by one.
  std::vector<torch::Tensor> project(const FusedLinear& linear) const;
};

class TokenMixer {
 public:
  virtual ~TokenMixer() = default;
  // The layer's input (N rows of hidden states, normed by in.normed() or in.project()) -> (N, hidden), the
  // residual update.
  virtual torch::Tensor forward(const LayerInput& in, const StepContext& ctx, CachePool& cache,
                                int layer) = 0;
  virtual LayerCacheSpec cache_spec() const = 0;
  // Re-fuses projections whose parameters were replaced since (FusedLinear::refresh); true when any moved.
  virtual bool refresh_weights() { return false; }
};

class AttentionMixer : public TokenMixer {
 public:
  // fuse_projections: q/k/v as one matmul (FusedLinear), which re-points the projections' parameters.
  AttentionMixer(model::AttentionImpl* attention, const model::ModelConfig& config, bool fuse_projections);
  torch::Tensor forward(const LayerInput& in, const StepContext& ctx, CachePool& cache, int layer) override;
  LayerCacheSpec cache_spec() const override;
  bool refresh_weights() override { return qkv_.refresh(); }

 private:
  // With ctx.decode_linear, no q/k norm and pages in the activations' dtype: the input norm, the fused q/k/v
  // projection, RoPE and the K/V write as one kernel (norm_qkv_rope_cuda); returns q, or an undefined tensor
  // where that does not apply.
  torch::Tensor decode_qkv_rope(const LayerInput& in, const StepContext& ctx, torch::Tensor& kp,
                                torch::Tensor& vp);

  model::AttentionImpl* attn_;  // owned by the Decoder the runner holds
  int64_t heads_, kv_heads_, head_dim_;
  double scale_;
  FusedLinear qkv_;  // q_proj, k_proj, v_proj as one matmul
};

// x (N, H, D), cos/sin (N, D): x * cos + rotate_half(x) * sin.
torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

}  // namespace musacoder::engine
