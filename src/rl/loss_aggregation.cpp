#include "rl/loss_aggregation.h"

#include <cmath>
#include <string>

namespace musacoder::rl {

Result<std::vector<double>> aggregation_weights(std::span<const std::uint8_t> mask, TokenBatchShape shape,
                                                LossAggregation mode) {
  if (mask.size() != shape.size()) {
    return invalid_argument("aggregation_weights: mask has " + std::to_string(mask.size()) +
                           " entries, shape (B,T) needs " + std::to_string(shape.size()));
  }
  std::vector<double> weights(shape.size(), 0.0);
  const std::size_t T = shape.max_len;
  std::vector<std::size_t> row_tokens(shape.batch, 0);
  std::size_t total_tokens = 0;
  std::size_t nonempty_rows = 0;
  for (std::size_t b = 0; b < shape.batch; ++b) {
    for (std::size_t t = 0; t < T; ++t) row_tokens[b] += mask[b * T + t] != 0 ? 1 : 0;
    total_tokens += row_tokens[b];
    nonempty_rows += row_tokens[b] > 0 ? 1 : 0;
  }
  if (total_tokens == 0) return weights;
  for (std::size_t b = 0; b < shape.batch; ++b) {
    if (row_tokens[b] == 0) continue;
    double w = 0.0;
    switch (mode) {
      case LossAggregation::kTokenMean:
        w = 1.0 / static_cast<double>(total_tokens);
        break;
      case LossAggregation::kSequenceMeanBatchMean:
        w = 1.0 / (static_cast<double>(row_tokens[b]) * static_cast<double>(nonempty_rows));
        break;
      case LossAggregation::kSequenceSumOverMaxLen:
        w = 1.0 / (static_cast<double>(T) * static_cast<double>(shape.batch));
        break;
    }
    for (std::size_t t = 0; t < T; ++t) {
      if (mask[b * T + t] != 0) weights[b * T + t] = w;
    }
  }
  return weights;
}

Result<double> aggregate_loss(std::span<const double> token_loss, std::span<const std::uint8_t> mask,
                              TokenBatchShape shape, LossAggregation mode) {
  if (token_loss.size() != shape.size()) {
    return invalid_argument("aggregate_loss: token_loss has " + std::to_string(token_loss.size()) +
                           " entries, shape (B,T) needs " + std::to_string(shape.size()));
  }
  auto weights = aggregation_weights(mask, shape, mode);
  if (!weights.ok()) return weights.status();
  double loss = 0.0;
  for (std::size_t i = 0; i < token_loss.size(); ++i) {
    if (mask[i] == 0) continue;
    if (!std::isfinite(token_loss[i])) {
      return invalid_argument("aggregate_loss: token loss " + std::to_string(i) + " is not finite");
    }
    loss += weights.value()[i] * token_loss[i];
  }
  return loss;
}

}  // namespace musacoder::rl
