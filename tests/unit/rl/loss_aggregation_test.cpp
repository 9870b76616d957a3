#include "rl/loss_aggregation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace musacoder::rl {
namespace {

// Row 0: losses {1,2,3} all valid; row 1: {4, pad, pad}. B = 2, T = 3.
const std::vector<double> kLoss = {1, 2, 3, 4, NAN, NAN};
const std::vector<std::uint8_t> kMask = {1, 1, 1, 1, 0, 0};
constexpr TokenBatchShape kShape{2, 3};

double aggregate(LossAggregation mode) {
  auto r = aggregate_loss(kLoss, kMask, kShape, mode);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : NAN;
}

TEST(LossAggregation, TokenMean) {
  EXPECT_DOUBLE_EQ(aggregate(LossAggregation::kTokenMean), 10.0 / 4.0);
}

TEST(LossAggregation, SequenceMeanThenBatchMean) {
  // (6/3 + 4/1) / 2 = 3
  EXPECT_DOUBLE_EQ(aggregate(LossAggregation::kSequenceMeanBatchMean), 3.0);
}

TEST(LossAggregation, SequenceSumOverMaxLen) {
  // (6 + 4) / (B·T) = 10/6
  EXPECT_DOUBLE_EQ(aggregate(LossAggregation::kSequenceSumOverMaxLen), 10.0 / 6.0);
}

TEST(LossAggregation, EmptyRowsAreSkippedBySequenceMean) {
  const std::vector<double> loss = {2, 4, 0, 0};
  const std::vector<std::uint8_t> mask = {1, 1, 0, 0};
  auto r = aggregate_loss(loss, mask, {2, 2}, LossAggregation::kSequenceMeanBatchMean);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r.value(), 3.0);
  auto none = aggregate_loss(loss, std::vector<std::uint8_t>(4, 0), {2, 2}, LossAggregation::kTokenMean);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none.value(), 0.0);
}

TEST(LossAggregation, WeightsMatchAggregate) {
  auto w = aggregation_weights(kMask, kShape, LossAggregation::kSequenceMeanBatchMean);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w.value(), (std::vector<double>{1.0 / 6, 1.0 / 6, 1.0 / 6, 0.5, 0, 0}));
}

TEST(LossAggregation, Errors) {
  EXPECT_FALSE(aggregate_loss(kLoss, kMask, {2, 2}, LossAggregation::kTokenMean).ok());
  EXPECT_FALSE(aggregation_weights(kMask, {3, 3}, LossAggregation::kTokenMean).ok());
  std::vector<double> bad = kLoss;
  bad[1] = INFINITY;
  EXPECT_FALSE(aggregate_loss(bad, kMask, kShape, LossAggregation::kTokenMean).ok());
}

// Token-mean and sequence-mean weights each sum to 1; a constant loss c aggregates to c under both.
TEST(LossAggregation, WeightPropertiesOverRandomMasks) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 100; ++trial) {
    const TokenBatchShape shape{1 + rng() % 6, 1 + rng() % 9};
    std::vector<std::uint8_t> mask(shape.size());
    for (auto& m : mask) m = rng() % 3 != 0 ? 1 : 0;
    mask[0] = 1;
    for (LossAggregation mode : {LossAggregation::kTokenMean, LossAggregation::kSequenceMeanBatchMean}) {
      auto w = aggregation_weights(mask, shape, mode);
      ASSERT_TRUE(w.ok());
      double sum = 0.0;
      for (double x : w.value()) sum += x;
      EXPECT_NEAR(sum, 1.0, 1e-12);
      auto c = aggregate_loss(std::vector<double>(shape.size(), 2.5), mask, shape, mode);
      ASSERT_TRUE(c.ok());
      EXPECT_NEAR(c.value(), 2.5, 1e-12);
    }
  }
}

}  // namespace
}  // namespace musacoder::rl
