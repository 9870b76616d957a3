// ModelRunner: one forward step of the engine over a batch of sequences, with the paged cache. The new
// tokens of all sequences are flattened to (N, hidden) so projections, norms and the MLP run as one matmul
// each; attention is per kind of token (TokenMixer, token_mixer.h). Only the rows whose logits are needed
// (the last new token of a sequence that samples next) go through the final norm and lm_head.
//
// On CUDA a decode-only step (every sequence adds one token) replays a CUDA graph captured for the
// smallest batch-size bucket that holds it (EngineOptions::cuda_graph_batch_sizes); the graph is captured
// on first use with that step's real inputs. Padding rows decode token 0 at position 0 into the null block.
// Weights are read in place at every step; graphs hold their addresses (reset_graphs() after reallocation).
// Not thread-safe: the engine thread owns it.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "engine/cache.h"
#include "engine/engine.h"
#include "engine/fused_linear.h"
#include "engine/token_mixer.h"
#include "model/decoder.h"

namespace musacoder::engine {

struct SeqWork {
  const std::vector<int32_t>* tokens = nullptr;  // the whole sequence (prompt + generated)
  int64_t cached = 0;                            // positions already in the cache
  int64_t count = 0;                             // new tokens: tokens[cached, cached + count)
  const SequenceCache* cache = nullptr;          // blocks cover [0, cached + count) (prepare_write done)
  bool want_logits = false;                      // logits of the last new token
};

class DecodeGraphs;

class ModelRunner {
 public:
  // The mixers of `model`'s layers (attention for every layer of the Qwen2/Qwen3/Llama decoder);
  // fuse_projections as EngineOptions::fuse_projections (false for mixers only asked for their cache specs).
  static std::vector<std::unique_ptr<TokenMixer>> make_mixers(model::Decoder& model, bool fuse_projections);

  ModelRunner(model::Decoder model, std::vector<std::unique_ptr<TokenMixer>> mixers, CachePool* pool,
              const EngineOptions& options, int64_t max_model_len);
  ~ModelRunner();

  // works: decodes (count 1, cached > 0, want_logits) first, then prefill chunks. Returns (R, vocab) float32
  // logits, one row per work with want_logits, in order. decode_ids, when defined ((works.size()) int64 on
  // the device, a decode-only step): the input ids instead of the works' tokens[cached] — which need not
  // exist yet: a multi-step decode feeds each step the previous step's draw without a host round trip.
  torch::Tensor step(const std::vector<SeqWork>& works, const torch::Tensor& decode_ids = {});
  void reset_graphs();
  // A decode-only step of `batch` sequences replays a CUDA graph.
  bool decode_graphs_for(int64_t batch) const;
  int64_t graph_replays() const { return graph_replays_; }
  torch::Device device() const { return device_; }

 private:
  torch::Tensor eager_step(const std::vector<SeqWork>& works, const torch::Tensor& decode_ids);
  torch::Tensor graph_step(const std::vector<SeqWork>& works, const torch::Tensor& decode_ids);
  // host as an int64 tensor on the device; on CUDA through pinned memory, so the copy is queued on the
  // stream without waiting for the GPU (a multi-step decode's host runs ahead of its steps).
  torch::Tensor upload(const std::vector<int64_t>& host) const;
  // The layers on flattened tokens; logits_rows undefined: every row.
  torch::Tensor forward_tokens(const torch::Tensor& ids, StepContext& ctx, const torch::Tensor& logits_rows);
  void set_rope(StepContext& ctx, int64_t max_position);
  // FusedLinear::refresh of every fused projection; true when any fused tensor moved.
  bool refresh_weights();

  model::Decoder model_;
  std::vector<std::unique_ptr<TokenMixer>> mixers_;
  std::vector<FusedLinear> gate_up_;  // per layer: mlp.gate_proj and mlp.up_proj as one matmul
  CachePool* pool_;
  EngineOptions options_;
  int64_t max_model_len_;
  torch::Device device_;
  torch::Tensor inv_freq_;  // (head_dim / 2) float32 on the device
  double rope_scaling_ = 1.0;
  // The fused CUDA kernels (fused_ops_cuda.h): on CUDA unless EngineOptions::fused_ops is off.
  bool fused_ops_ = false;
  std::unique_ptr<DecodeGraphs> graphs_;  // CUDA builds, on CUDA, cuda_graphs on
  int64_t graph_replays_ = 0;
};

}  // namespace musacoder::engine
