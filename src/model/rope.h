// Rotary position embedding with the rope_scaling variants that transformers implements for Qwen2/Qwen3/
// Llama: default, linear, dynamic (NTK), llama3 and yarn. The inverse frequencies are computed with the same
// float32 tensor ops as transformers' modeling_rope_utils.py, so cos/sin agree bit for bit on CPU.
//
// One difference by design: transformers' dynamic NTK keeps state across calls (it grows its cache and
// resets below the original length); ours is stateless and uses max(position_ids) + 1 of the current call,
// which equals transformers' for a fresh module and for monotonically growing decode positions.
#pragma once

#include <ATen/ATen.h>

#include <utility>

#include "model/config.h"

namespace musacoder::model {

class RotaryEmbedding {
 public:
  explicit RotaryEmbedding(const ModelConfig& config);

  // position_ids: (B, T) int64 on any device. Returns cos, sin: (B, T, head_dim) in `dtype` on that device,
  // already multiplied by the attention scaling (yarn).
  std::pair<at::Tensor, at::Tensor> cos_sin(const at::Tensor& position_ids, at::ScalarType dtype) const;

  // (head_dim / 2) float32 inverse frequencies for a call whose longest position is seq_len - 1.
  at::Tensor inv_freq(int64_t seq_len) const;
  double attention_scaling() const { return attention_scaling_; }

 private:
  RopeConfig rope_;
  int64_t dim_;
  int64_t max_position_embeddings_;
  at::Tensor inv_freq_;  // for every call of the static types, float32 on CPU
  double attention_scaling_ = 1.0;
};

// q or k: (B, H, T, D); cos/sin: (B, T, D). x * cos + rotate_half(x) * sin, rotate_half([a, b]) = [-b, a].
at::Tensor apply_rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

}  // namespace musacoder::model
