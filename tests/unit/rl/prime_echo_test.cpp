#include "rl/prime_echo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace musacoder::rl {
namespace {

PrimeEchoRewards rewards_of(const std::vector<double>& scores, const PrimeEchoOptions& o = {}) {
  auto r = prime_echo_rewards(scores, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : PrimeEchoRewards{};
}

TEST(PrimeEchoLesson, TwoTurnsFromTheLesson) {
  const auto r = rewards_of({0.2, 0.9});
  ASSERT_EQ(r.turn_reward.size(), 2u);
  EXPECT_NEAR(r.turn_reward[0], 0.445, 1e-12);  // 0.2 + 0.7·0.7·0.5
  EXPECT_NEAR(r.turn_reward[1], 0.35, 1e-12);   // 0.5·0.7
  EXPECT_EQ(r.train_mask, (std::vector<std::uint8_t>{1, 1}));
}

TEST(PrimeEchoLesson, RegressionsEarnNothingAndImprovementsAccumulate) {
  // δ1 = max(0.3 − 0.5, 0) = 0, δ2 = 0.3: r0 = 0.5 + 0.7·0.3·0.5 = 0.605, r1 = 0, r2 = 0.15.
  const auto r = rewards_of({0.5, 0.3, 0.8});
  EXPECT_NEAR(r.turn_reward[0], 0.605, 1e-12);
  EXPECT_EQ(r.turn_reward[1], 0.0);
  EXPECT_NEAR(r.turn_reward[2], 0.15, 1e-12);
}

TEST(PrimeEchoLesson, SingleTurnIsItsScore) {
  const auto r = rewards_of({0.73});
  EXPECT_EQ(r.turn_reward, (std::vector<double>{0.73}));
}

TEST(PrimeEchoLesson, GammaAndEtaAreHonoured) {
  PrimeEchoOptions o;
  o.gamma = 1.0;
  o.eta = 0.25;
  const auto r = rewards_of({0.0, 1.0}, o);  // r0 = 1·1·0.25, r1 = 0.75
  EXPECT_NEAR(r.turn_reward[0], 0.25, 1e-12);
  EXPECT_NEAR(r.turn_reward[1], 0.75, 1e-12);
}

// The point of PrimeEcho: failing on purpose in turn 1 and repairing in turn 2 earns turn 1 less than
// succeeding right away, for any first-turn score below the final one.
TEST(PrimeEchoLesson, FailingFirstNeverPaysTurnOne) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < 500; ++i) {
    const double s0 = u(rng), s1 = u(rng);
    const auto direct = rewards_of({std::max(s0, s1)});
    const auto repaired = rewards_of({s0, s1});
    EXPECT_LE(repaired.turn_reward[0], direct.turn_reward[0] + 1e-12);
  }
}

PrimeEchoOptions paper() {
  PrimeEchoOptions o;
  o.mode = PrimeEchoMode::kPaper;
  return o;
}

TEST(PrimeEchoPaper, AnchoredRewardWithEarlyBonus) {
  // First pass at turn 2 → bonus 0.05: R = 0.75·0.2 + 0.25·0.9 + 0.05 = 0.425.
  const auto r = rewards_of({0.2, 0.9, 0.5}, paper());
  EXPECT_NEAR(r.turn_reward[0], 0.425, 1e-12);
  EXPECT_EQ(r.turn_reward[1], 0.0);
  EXPECT_EQ(r.turn_reward[2], 0.0);
  EXPECT_EQ(r.train_mask, (std::vector<std::uint8_t>{1, 0, 0}));
}

TEST(PrimeEchoPaper, BonusDependsOnTheFirstPassingTurn) {
  EXPECT_NEAR(rewards_of({0.8}, paper()).turn_reward[0], 0.8 + 0.1, 1e-12);                // turn 1
  EXPECT_NEAR(rewards_of({0.1, 0.2, 0.7}, paper()).turn_reward[0], 0.075 + 0.175, 1e-12);  // turn 3: none
  EXPECT_NEAR(rewards_of({0.1, 0.3}, paper()).turn_reward[0], 0.075 + 0.075, 1e-12);       // never passes
  PrimeEchoOptions custom = paper();
  custom.alpha = 0.5;
  custom.early_bonus = {0.0, 0.3};
  custom.pass_threshold = 1.0;
  EXPECT_NEAR(rewards_of({0.4, 1.0}, custom).turn_reward[0], 0.2 + 0.5 + 0.3, 1e-12);
}

TEST(PrimeEcho, Errors) {
  EXPECT_FALSE(prime_echo_rewards(std::vector<double>{}).ok());
  EXPECT_FALSE(prime_echo_rewards(std::vector<double>{0.1, 0.2, 0.3, 0.4}).ok());  // > max_turns
  EXPECT_FALSE(prime_echo_rewards(std::vector<double>{0.1, NAN}).ok());
  PrimeEchoOptions bad;
  bad.gamma = 1.5;
  EXPECT_FALSE(prime_echo_rewards(std::vector<double>{0.1}, bad).ok());
  bad = {};
  bad.max_turns = 0;
  EXPECT_FALSE(prime_echo_rewards(std::vector<double>{0.1}, bad).ok());
  PrimeEchoOptions longer;
  longer.max_turns = 5;
  EXPECT_TRUE(prime_echo_rewards(std::vector<double>{0.1, 0.2, 0.3, 0.4}, longer).ok());
}

TEST(PrimeEcho, ShouldContinue) {
  const PrimeEchoOptions o;  // max 3 turns, stop on pass ≥ 0.6
  EXPECT_TRUE(should_continue(std::vector<double>{}, o));
  EXPECT_TRUE(should_continue(std::vector<double>{0.2}, o));
  EXPECT_FALSE(should_continue(std::vector<double>{0.6}, o));
  EXPECT_TRUE(should_continue(std::vector<double>{0.2, 0.4}, o));
  EXPECT_FALSE(should_continue(std::vector<double>{0.2, 0.4, 0.5}, o));  // max turns
  PrimeEchoOptions keep_going;
  keep_going.stop_early_on_pass = false;
  EXPECT_TRUE(should_continue(std::vector<double>{0.9}, keep_going));
}

}  // namespace
}  // namespace musacoder::rl
