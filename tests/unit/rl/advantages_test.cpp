#include "rl/advantages.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace musacoder::rl {
namespace {

std::vector<double> advantages_of(const std::vector<double>& rewards, std::size_t k, AdvantageOptions o) {
  auto r = group_advantages(rewards, k, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : std::vector<double>{};
}

// Group {1, 0, 0, 0}: mean 0.25, deviations {0.75, −0.25 ×3}, Σ dev² = 0.75.
// Sample std = sqrt(0.75/3) = 0.5; population std = sqrt(0.75/4) = sqrt(3)/4.
TEST(GroupAdvantages, GrpoSampleStdHandComputed) {
  AdvantageOptions o;
  o.epsilon = 0.0;
  const auto a = advantages_of({1, 0, 0, 0}, 4, o);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_DOUBLE_EQ(a[0], 1.5);
  EXPECT_DOUBLE_EQ(a[1], -0.5);
  EXPECT_DOUBLE_EQ(a[3], -0.5);
}

TEST(GroupAdvantages, GrpoPopulationStdHandComputed) {
  AdvantageOptions o;
  o.epsilon = 0.0;
  o.std_kind = StdKind::kPopulation;
  const auto a = advantages_of({1, 0, 0, 0}, 4, o);
  EXPECT_NEAR(a[0], 0.75 / (std::sqrt(3.0) / 4.0), 1e-12);  // = sqrt(3) ≈ 1.732
  EXPECT_NEAR(a[1], -0.25 / (std::sqrt(3.0) / 4.0), 1e-12);
}

TEST(GroupAdvantages, GrpoEpsilonEntersTheDenominator) {
  AdvantageOptions o;
  o.epsilon = 0.5;  // denominator 0.5 + 0.5 = 1
  const auto a = advantages_of({1, 0, 0, 0}, 4, o);
  EXPECT_DOUBLE_EQ(a[0], 0.75);
  EXPECT_DOUBLE_EQ(a[1], -0.25);
}

TEST(GroupAdvantages, DrGrpoIsMeanCentredOnly) {
  AdvantageOptions o;
  o.estimator = AdvantageEstimator::kDrGrpo;
  const auto a = advantages_of({0.2, 0.6, 1.0}, 3, o);
  EXPECT_NEAR(a[0], -0.4, 1e-12);
  EXPECT_NEAR(a[1], 0.0, 1e-12);
  EXPECT_NEAR(a[2], 0.4, 1e-12);
}

TEST(GroupAdvantages, RlooLeaveOneOut) {
  AdvantageOptions o;
  o.estimator = AdvantageEstimator::kRloo;
  // {1,0,0,0}: 1 − 0 = 1; 0 − 1/3.
  const auto a = advantages_of({1, 0, 0, 0}, 4, o);
  EXPECT_DOUBLE_EQ(a[0], 1.0);
  EXPECT_NEAR(a[1], -1.0 / 3.0, 1e-15);
  // Second group of a batch is handled independently: {0.5, 1.5} → ±1.
  const auto b = advantages_of({1, 0, 0, 0, 0.5, 1.5, 1.5, 0.5}, 4, o);
  EXPECT_DOUBLE_EQ(b[4], 0.5 - (1.5 + 1.5 + 0.5) / 3.0);
  EXPECT_DOUBLE_EQ(b[5], 1.5 - (0.5 + 1.5 + 0.5) / 3.0);
}

TEST(GroupAdvantages, GroupsAreIndependent) {
  AdvantageOptions o;
  o.estimator = AdvantageEstimator::kDrGrpo;
  const auto a = advantages_of({1, 3, 10, 20}, 2, o);
  EXPECT_DOUBLE_EQ(a[0], -1);
  EXPECT_DOUBLE_EQ(a[1], 1);
  EXPECT_DOUBLE_EQ(a[2], -5);
  EXPECT_DOUBLE_EQ(a[3], 5);
}

TEST(GroupAdvantages, GroupOfOneHasZeroAdvantage) {
  const auto a = advantages_of({0.7, 0.1}, 1, {});
  EXPECT_EQ(a, (std::vector<double>{0.0, 0.0}));
}

TEST(GroupAdvantages, Errors) {
  const std::vector<double> r = {1, 0, 1};
  EXPECT_FALSE(group_advantages(r, 0).ok());
  EXPECT_FALSE(group_advantages(r, 2).ok());
  EXPECT_FALSE(group_advantages(std::vector<double>{1, NAN}, 2).ok());
  EXPECT_FALSE(group_advantages(std::vector<double>{1, INFINITY}, 2).ok());
  AdvantageOptions rloo;
  rloo.estimator = AdvantageEstimator::kRloo;
  EXPECT_FALSE(group_advantages(r, 1, rloo).ok());
  AdvantageOptions bad_eps;
  bad_eps.epsilon = -1e-3;
  EXPECT_FALSE(group_advantages(r, 3, bad_eps).ok());
  auto empty = group_advantages(std::vector<double>{}, 4);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty.value().empty());
}

// Properties over seeded random groups, every estimator: each group's advantages sum to ~0, a uniform
// group has exactly zero advantage, and adding a constant to every reward changes nothing.
TEST(GroupAdvantages, PropertiesOverRandomGroups) {
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> reward(-2.0, 2.0);
  const AdvantageEstimator estimators[] = {AdvantageEstimator::kGrpo, AdvantageEstimator::kDrGrpo,
                                           AdvantageEstimator::kRloo};
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t k = 2 + static_cast<std::size_t>(trial % 15);
    const std::size_t groups = 1 + static_cast<std::size_t>(trial % 4);
    std::vector<double> rewards(k * groups);
    for (double& r : rewards) r = reward(rng);
    // Make the last group uniform.
    for (std::size_t i = 0; i < k; ++i) rewards[(groups - 1) * k + i] = 0.3;
    std::vector<double> shifted = rewards;
    for (double& r : shifted) r += 5.0;
    for (AdvantageEstimator e : estimators) {
      AdvantageOptions o;
      o.estimator = e;
      o.std_kind = trial % 2 == 0 ? StdKind::kSample : StdKind::kPopulation;
      const auto a = advantages_of(rewards, k, o);
      const auto b = advantages_of(shifted, k, o);
      ASSERT_EQ(a.size(), rewards.size());
      for (std::size_t g = 0; g < groups; ++g) {
        double sum = 0.0;
        for (std::size_t i = 0; i < k; ++i) sum += a[g * k + i];
        EXPECT_NEAR(sum, 0.0, 1e-9) << "trial " << trial << " group " << g;
      }
      for (std::size_t i = 0; i < k; ++i) EXPECT_EQ(a[(groups - 1) * k + i], 0.0);
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6);
    }
  }
}

}  // namespace
}  // namespace musacoder::rl
