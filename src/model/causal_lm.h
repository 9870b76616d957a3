// CausalLm: what trainers, scorers and tools need from a decoder-only LM of any supported family — the
// dense Decoder (Qwen2/Qwen3/Llama, model/decoder.h) or the Qwen3.5 hybrid (model/qwen3_5.h). Obtain one
// with load_model() (model/checkpoint.h), which dispatches on config.json's model_type. Incremental
// decoding is family-specific (Decoder::forward_step with a KVCache; Qwen35::forward_step with a
// HybridCache): cast with as_decoder() / as_qwen35() (model/checkpoint.h).
// Thread-safety: as the underlying torch module.
#pragma once

#include <torch/torch.h>

#include "model/config.h"

namespace musacoder::model {

// Inputs of the training forward. input_ids is required; the others are optional (undefined tensors).
struct ForwardInput {
  torch::Tensor input_ids;     // (B, T) int64
  torch::Tensor position_ids;  // (B, T) int64; default: 0..T-1, or restarting at 0 per packed sequence
  torch::Tensor sequence_ids;  // (B, T) int64; packed sequences: attention only within equal ids
};

class CausalLm {
 public:
  virtual ~CausalLm() = default;
  virtual const ModelConfig& config() const = 0;
  // Logits (B, T, vocab) in the parameters' dtype.
  virtual torch::Tensor forward(const ForwardInput& in) = 0;
  // The final-normed hidden states (B, T, C), for losses that project in chunks.
  virtual torch::Tensor forward_hidden(const ForwardInput& in) = 0;
  // (vocab, C): lm_head's weight, or the embedding matrix when tied.
  virtual torch::Tensor output_weight() const = 0;
  // The module itself: parameters(), to(), train()/eval(), named_parameters() (Hugging Face names).
  virtual torch::nn::Module& module() = 0;
};

}  // namespace musacoder::model
