// The benchmark's rounds (issue #29): how many a backend gets, and the speedup of paired rounds against
// hand-computed values.
#include <gtest/gtest.h>

#include "mooreeval/pipeline/evaluator.h"
#include "mooreeval/pipeline/runtime_checks.h"

namespace musacoder::eval {
namespace {

TEST(TimingRounds, BackendDefaultsAndTheOption) {
  EvalOptions o;
  o.backend = build::Backend::kCpu;
  EXPECT_EQ(timing_rounds_of(o), 5);
  o.backend = build::Backend::kCuda;
  EXPECT_EQ(timing_rounds_of(o), 1);
  o.timing_rounds = 4;
  EXPECT_EQ(timing_rounds_of(o), 4);
  EXPECT_EQ(o.to_json()["timing_rounds"], 4);
}

TEST(TimingRounds, PairedSpeedupIsTheMedianOfTheRoundsRatios) {
  // Ratios 2/1 = 2, 3/2 = 1.5, 1/1 = 1 -> median 1.5 (the ratio of the medians would be 2/1 = 2).
  EXPECT_DOUBLE_EQ(*paired_speedup({2, 3, 1}, {1, 2, 1}), 1.5);
  // A machine slowed during round 2 stretches that round on both sides' turns less than a whole side:
  // ratios 1.0, 1.8 (reference slowed), 1.02 -> 1.02.
  EXPECT_DOUBLE_EQ(*paired_speedup({0.10, 0.18, 0.102}, {0.10, 0.10, 0.10}), 1.02);
  // Even count: the mean of the middle two (ratios 1, 2, 4, 8 -> 3).
  EXPECT_DOUBLE_EQ(*paired_speedup({1, 2, 4, 8}, {1, 1, 1, 1}), 3.0);
  // One round: the plain ratio.
  EXPECT_DOUBLE_EQ(*paired_speedup({0.3}, {0.2}), 1.5);
  // Unpaired or non-positive rounds are left out; none left -> no speedup.
  EXPECT_DOUBLE_EQ(*paired_speedup({1, 2, 9}, {0.5, 0}), 2.0);
  EXPECT_FALSE(paired_speedup({}, {1}).has_value());
  EXPECT_FALSE(paired_speedup({0}, {1}).has_value());
}

}  // namespace
}  // namespace musacoder::eval
