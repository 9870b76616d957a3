#pragma once
// How per-token losses of a padded batch become one scalar. The choice changes the effective weight
// of long versus short responses, which is why GRPO, DAPO and Dr.GRPO differ here:
//
//   kTokenMean              Σ_b Σ_t m·ℓ / Σ_b Σ_t m                 every token weighs the same (DAPO)
//   kSequenceMeanBatchMean  (1/B') Σ_b (Σ_t m·ℓ / Σ_t m)             every sequence weighs the same (GRPO);
//                                                                    B' = rows with ≥ 1 valid token
//   kSequenceSumOverMaxLen  (1/B) Σ_b Σ_t m·ℓ / T                     constant normaliser (Dr.GRPO, TRL)
//
// m is the response mask (1 = token is trained), T = max_len of the padded rows. A batch without any
// valid token aggregates to 0.
//
// aggregation_weights() gives the w_{b,t} with loss = Σ w_{b,t}·ℓ_{b,t}; a tensor trainer multiplies its
// per-token loss by them once instead of re-implementing the modes.
//
// Thread-safety: pure functions.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/check.h"
#include "core/status.h"

namespace musacoder::rl {

enum class LossAggregation {
  kTokenMean,
  kSequenceMeanBatchMean,
  kSequenceSumOverMaxLen,
};

// Shape of a padded token batch: `batch` rows of `max_len` tokens, row-major (B,T).
struct TokenBatchShape {
  std::size_t batch = 0;    // B: sequences
  std::size_t max_len = 0;  // T: tokens per padded row
  std::size_t size() const { return batch * max_len; }
};

// mask: (B,T), 0 or 1 (any non-zero counts as 1). Returns (B,T) weights; masked-out tokens get 0.
// Errors (invalid): mask.size() != B·T.
Result<std::vector<double>> aggregation_weights(std::span<const std::uint8_t> mask, TokenBatchShape shape,
                                                LossAggregation mode);

// token_loss, mask: (B,T). Returns the aggregated scalar. Masked-out entries of token_loss are ignored
// (they may hold NaN padding). Errors (invalid): a size != B·T; a non-finite loss under the mask.
Result<double> aggregate_loss(std::span<const double> token_loss, std::span<const std::uint8_t> mask,
                              TokenBatchShape shape, LossAggregation mode);

}  // namespace musacoder::rl
