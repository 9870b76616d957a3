// The tensor side of one RL update: a padded token batch, no-grad scoring (old, reference, mirror logprobs),
// and the PPO-clip + KL loss's backward, with the formulas from src/rl.
//
// Shapes: rows are whole conversations (prompt · responses · feedback), right-padded to T = longest − 1.
// Position t of row b predicts ids[b][t+1]: input_ids (B,T) = ids[:, :−1], targets = ids[:, 1:]. mask (B,T) = 1
// where the target is a trained response token. Causal attention makes right padding harmless.
//
// Loss (rl::policy_loss, sequence-mean-then-batch-mean by default): PPO-clip with ρ = exp(logp − old_logp) and
// coef·k3(logp, ref_logp). Its gradient ∂loss/∂logp (B,T) comes from rl::policy_loss and is pushed through
// weighted_logprob_sum (token_logprob.h), so no (T, vocab) tensor exists at any point.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "model/decoder.h"
#include "rl/policy_loss.h"
#include "train/common/forward.h"

namespace musacoder::train::rl {

struct RowTokens {
  std::vector<int32_t> ids;          // the conversation (L tokens)
  std::vector<uint8_t> mask;         // (L) 1 = trained token
  std::vector<double> advantage;     // (L) per token (read where mask is 1)
};

struct TokenBatch {
  int64_t rows = 0, cols = 0;        // B, T
  torch::Tensor input_ids;           // (B,T) int64 on the device
  torch::Tensor index;               // (N) int64 flat positions b·T+t where mask is 1
  torch::Tensor targets;             // (N) int64 their target ids
  std::vector<uint8_t> mask;         // (B,T)
  std::vector<double> advantage;     // (B,T)
  std::vector<std::size_t> tokens;   // (B) trained tokens per row
};

TokenBatch make_token_batch(const std::vector<RowTokens>& rows, const torch::Device& device);

// Per-row values: row b has L_b − 1 entries, entry t for the target ids[t+1] (RowValues).
using RowValues = std::vector<std::vector<double>>;
// Row values laid out (B,T) for `batch` (0 in padding).
std::vector<double> to_grid(const RowValues& v, const TokenBatch& batch);

// How the update's forwards are cut: rows go through the model in consecutive groups of at most
// `micro_batch_tokens` padded tokens (rows × the group's longest row; a longer row goes alone), so memory is
// bounded by the group, not the step's batch; logits in chunks of `chunk_rows` positions.
struct ForwardShape {
  int64_t chunk_rows = 1024;
  int64_t micro_batch_tokens = 16384;
  bool checkpoint = false;  // gradient checkpointing in the forward with grad
};

// The elements of v at the positions `keep`, in that order.
template <typename T>
std::vector<T> pick(const std::vector<T>& v, const std::vector<std::size_t>& keep) {
  std::vector<T> out;
  for (std::size_t i : keep) out.push_back(v[i]);
  return out;
}

// The consecutive row groups of `rows` under `budget` padded tokens (as ForwardShape says).
std::vector<std::vector<std::size_t>> micro_batches(const std::vector<RowTokens>& rows, int64_t budget);

// Logprobs of every target under `model` (no graph), group by group. entropy: the same layout, when given.
RowValues score_rows(model::Decoder& model, const TrainingForward& forward,
                     const std::vector<RowTokens>& rows, const ForwardShape& shape,
                     RowValues* entropy = nullptr);

struct LossStats {
  double loss = 0, pg_loss = 0, kl = 0, clip_fraction = 0;
};

// The RL loss over the whole batch and its backward into the parameters' .grad (not the optimizer step). The
// loss's gradient ∂loss/∂logp comes from the whole batch (its aggregation spans rows); it is then pushed
// through one forward with grad per row group, so .grad equals one whole-batch backward. `batch` is
// make_token_batch of `rows`; logp: the current policy's scores (score_rows; old_logp itself before the first
// optimizer step); old_logp / ref_logp: per row as from score_rows (ref_logp empty iff the KL coefficient is
// 0).
Result<LossStats> backward_policy_loss(model::Decoder& model, const TrainingForward& forward,
                                       const std::vector<RowTokens>& rows, const TokenBatch& batch,
                                       const RowValues& logp, const RowValues& old_logp,
                                       const RowValues& ref_logp,
                                       const ::musacoder::rl::PolicyLossOptions& options,
                                       const ForwardShape& shape);

}  // namespace musacoder::train::rl
