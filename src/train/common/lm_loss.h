// Chunked LM-head cross-entropy: the loss of a language model's next-token predictions without ever holding
// the (T, vocab) logits. At Qwen3.5's vocabulary (248,320) fp32 logits of one 8K-token row would be 8 GB; here
// at most `chunk_rows` × vocab logits exist at a time, in forward and in backward (which recomputes them).
//
//   hidden  (N, C)   the final-normed hidden states of the N positions that have a target (any float dtype)
//   weight  (V, C)   the LM head (the embedding matrix when tied), hidden's dtype
//   targets (N)      int64 token ids in [0, V)
//   returns          scalar float32: Σ_i  logsumexp(h_i Wᵀ) − (h_i Wᵀ)[target_i]        (a SUM, not a mean)
// Logits are computed in hidden's dtype (bf16 on GPU, like the unchunked matmul) and reduced in float32.
// Backward: ∂/∂logits = softmax − onehot per chunk; ∂h = g W, ∂W = Σ gᵀ h (accumulated in float32, then cast).
// Gradients flow to `hidden` and, when it requires grad, `weight`.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace musacoder::train {

// Rows per chunk so that one chunk's float32 logits would take about `budget_bytes` (on CUDA they are 16-bit,
// half that). Each chunk adds its weight-gradient product into the float32 (V, C) accumulator, a full read
// and write of it: 1 GiB makes a 4,096-token row three chunks at a 152K vocabulary, not ten.
int64_t lm_loss_chunk_rows(int64_t vocab, int64_t budget_bytes = 1ll << 30);

torch::Tensor chunked_lm_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                       const torch::Tensor& targets, int64_t chunk_rows);

}  // namespace musacoder::train
