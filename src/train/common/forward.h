// The training forward of a Decoder: embed → layers → final norm, the same computation as
// Decoder::forward_hidden (model/decoder.h), with optional per-layer activation checkpointing.
//
// With checkpointing each DecoderLayer runs inside a custom autograd Function that keeps only the layer's input
// (B, T, C): the forward runs without building a graph, and backward re-runs the layer with grad enabled and
// back-propagates through the recomputed graph (parameter gradients accumulate into .grad as usual). Activation
// memory drops from O(L · per-layer intermediates) to O(L · B·T·C) plus one layer's intermediates, at the cost of
// a second forward of every layer. The layers are deterministic (no dropout), so no RNG state is replayed.
#pragma once

#include <torch/torch.h>

#include <functional>

#include "model/decoder.h"
#include "model/rope.h"

namespace musacoder::train {

class TrainingForward {
 public:
  explicit TrainingForward(const model::ModelConfig& config) : rope_(config) {}

  // Called before each layer runs (also before its recomputation), e.g. to materialise LoRA weights.
  using LayerHook = std::function<void(int64_t layer)>;

  // (B, T, C) final-normed hidden states. in.position_ids / in.sequence_ids as in model::ForwardInput
  // (sequence_ids undefined: plain causal attention). On CUDA the decoder's RMSNorms are switched to their
  // fused kernel (RMSNormImpl::fused) for this and every later forward of the decoder.
  torch::Tensor hidden(model::Decoder& decoder, const model::ForwardInput& in, bool checkpoint,
                       const LayerHook& before_layer = {}) const;

 private:
  model::RotaryEmbedding rope_;
};

// Sets `fused` on every RMSNorm (the zero-centred norms of Qwen3.5 keep their ops) and every MLP's SwiGLU
// (model/swiglu.h) of the decoder: the trainers' forward turns them on for CUDA tensors.
void use_fused_ops(model::Decoder& decoder, bool fused);

}  // namespace musacoder::train
