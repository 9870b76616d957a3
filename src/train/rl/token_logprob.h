// Per-token log-probabilities of given tokens from final hidden states, chunked so that at most `chunk_rows`
// × vocab logits exist at a time (forward and backward): Qwen3.5's 248K vocabulary never materialises
// (T, vocab) float32 logits.
//
//   hidden  (N, C)  final-normed hidden states of the positions that predict a target (any float dtype)
//   weight  (V, C)  the LM head (the embedding when tied), hidden's dtype
//   targets (N)     int64 token ids
//
// token_logprobs: (N) float32 log softmax(h Wᵀ)[target], no graph (reference, mirror, old logprobs).
// weighted_logprob_sum: Σ_i w_i · logp_i as a float32 scalar with a gradient to hidden (and weight when it
// requires grad): ∂/∂logits_i = w_i · (onehot(target_i) − softmax_i), recomputed per chunk in backward. The
// trainer passes w = ∂loss/∂logp from rl::policy_loss, so backward of this scalar is backward of the RL loss.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace musacoder::train::rl {

// entropy: when given, receives (N) float32 entropies −Σ p log p of each row's distribution (for metrics).
torch::Tensor token_logprobs(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& targets,
                             int64_t chunk_rows, torch::Tensor* entropy = nullptr);

torch::Tensor weighted_logprob_sum(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, const torch::Tensor& weights, int64_t chunk_rows);

}  // namespace musacoder::train::rl
