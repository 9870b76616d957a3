#include "rl/policy_loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace musacoder::rl {
namespace {

const PpoClipOptions kClip{};  // ε_low = ε_high = 0.2

TEST(PpoClip, PositiveAdvantageClippedAbove) {
  const auto t = ppo_clip_token(std::log(1.5), 0.0, 1.0, kClip);  // ρ = 1.5 > 1.2
  EXPECT_NEAR(t.ratio, 1.5, 1e-12);
  EXPECT_NEAR(t.loss, -1.2, 1e-12);
  EXPECT_TRUE(t.clipped);
  EXPECT_TRUE(t.clipped_high);
  EXPECT_EQ(t.grad_logp, 0.0);
}

TEST(PpoClip, PositiveAdvantageBelowOneIsNotClipped) {
  const auto t = ppo_clip_token(std::log(0.5), 0.0, 1.0, kClip);  // min(0.5, 0.8) = 0.5
  EXPECT_NEAR(t.loss, -0.5, 1e-12);
  EXPECT_FALSE(t.clipped);
  EXPECT_NEAR(t.grad_logp, -0.5, 1e-12);
}

TEST(PpoClip, NegativeAdvantageClippedBelow) {
  const auto t = ppo_clip_token(std::log(0.5), 0.0, -1.0, kClip);  // −min(−0.5, −0.8) = 0.8
  EXPECT_NEAR(t.loss, 0.8, 1e-12);
  EXPECT_TRUE(t.clipped);
  EXPECT_TRUE(t.clipped_low);
  EXPECT_EQ(t.grad_logp, 0.0);
}

TEST(PpoClip, NegativeAdvantageAboveOneIsNotClipped) {
  const auto t = ppo_clip_token(std::log(1.5), 0.0, -2.0, kClip);  // −min(−3, −2.4) = 3
  EXPECT_NEAR(t.loss, 3.0, 1e-12);
  EXPECT_FALSE(t.clipped);
  EXPECT_NEAR(t.grad_logp, 3.0, 1e-12);  // −A·ρ = 2·1.5
}

TEST(PpoClip, ClipHigherWidensTheUpperSideOnly) {
  const PpoClipOptions dapo{0.2, 0.28};
  const auto up = ppo_clip_token(std::log(1.25), 0.0, 1.0, dapo);
  EXPECT_NEAR(up.loss, -1.25, 1e-12);
  EXPECT_FALSE(up.clipped);
  const auto up_default = ppo_clip_token(std::log(1.25), 0.0, 1.0, kClip);
  EXPECT_NEAR(up_default.loss, -1.2, 1e-12);
  const auto down = ppo_clip_token(std::log(0.7), 0.0, -1.0, dapo);  // still clipped at 0.8
  EXPECT_NEAR(down.loss, 0.8, 1e-12);
  EXPECT_TRUE(down.clipped_low);
}

// logp = −1, ref = −1.5: log r = −0.5.
TEST(KlEstimators, HandComputed) {
  EXPECT_NEAR(kl_token(-1.0, -1.5, KlEstimator::kK1).value, 0.5, 1e-15);
  EXPECT_NEAR(kl_token(-1.0, -1.5, KlEstimator::kK2).value, 0.125, 1e-15);
  EXPECT_NEAR(kl_token(-1.0, -1.5, KlEstimator::kK3).value, std::exp(-0.5) - 0.5, 1e-15);  // 0.1065306597
  EXPECT_NEAR(kl_token(-1.0, -1.5, KlEstimator::kK3).value, 0.10653065971263342, 1e-15);
  for (KlEstimator e : {KlEstimator::kK1, KlEstimator::kK2, KlEstimator::kK3}) {
    EXPECT_EQ(kl_token(-0.3, -0.3, e).value, 0.0);
  }
}

TEST(KlEstimators, K3IsNonNegative) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> lp(-8.0, 0.0);
  for (int i = 0; i < 1000; ++i) EXPECT_GE(kl_token(lp(rng), lp(rng), KlEstimator::kK3).value, 0.0);
}

// Gradients of the token terms agree with central finite differences away from clip boundaries.
TEST(PolicyLoss, TokenGradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const double h = 1e-6;
  for (int i = 0; i < 200; ++i) {
    const double logp = -1.0 + 0.5 * u(rng), old = logp + 0.4 * u(rng), ref = logp + u(rng), adv = u(rng);
    const double ratio = std::exp(logp - old);
    if (std::abs(ratio - 0.8) < 1e-3 || std::abs(ratio - 1.2) < 1e-3) continue;
    const double fd =
        (ppo_clip_token(logp + h, old, adv, kClip).loss - ppo_clip_token(logp - h, old, adv, kClip).loss) /
        (2 * h);
    EXPECT_NEAR(ppo_clip_token(logp, old, adv, kClip).grad_logp, fd, 1e-6);
    for (KlEstimator e : {KlEstimator::kK1, KlEstimator::kK2, KlEstimator::kK3}) {
      const double kfd = (kl_token(logp + h, ref, e).value - kl_token(logp - h, ref, e).value) / (2 * h);
      EXPECT_NEAR(kl_token(logp, ref, e).grad_logp, kfd, 1e-6);
    }
  }
}

// B = 2, T = 2; row 1 has one padding token. Advantages per sequence: +1, −1.
//   token (0,0): ρ = 1.5, A = +1 → −1.2 (clipped high)      token (0,1): ρ = 1, A = +1 → −1
//   token (1,0): ρ = 0.5, A = −1 → 0.8 (clipped low)        token (1,1): padding
// sequence-mean: ((−1.2 − 1)/2 + 0.8) / 2 = −0.15; token-mean: (−1.2 − 1 + 0.8)/3.
TEST(PolicyLoss, BatchHandComputed) {
  const std::vector<double> logp = {std::log(1.5), -0.7, std::log(0.5), NAN};
  const std::vector<double> old = {0.0, -0.7, 0.0, NAN};
  const std::vector<double> ref = {std::log(1.5) + 0.5, -0.7, std::log(0.5), NAN};  // k3 only on token (0,0)
  const std::vector<double> adv = {1.0, -1.0};
  const std::vector<std::uint8_t> mask = {1, 1, 1, 0};
  PolicyLossInputs in{{2, 2}, logp, old, ref, adv, mask};
  auto r = policy_loss(in);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r.value().pg_loss, -0.15, 1e-12);
  const double k3 = std::exp(0.5) - 1.0 - 0.5;
  EXPECT_NEAR(r.value().kl, k3 / 4.0, 1e-12);  // weight of token (0,0) is 1/(2·2)
  EXPECT_NEAR(r.value().loss, -0.15 + 0.04 * k3 / 4.0, 1e-12);
  EXPECT_NEAR(r.value().clip_fraction, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.value().clip_fraction_low, 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.value().clip_fraction_high, 1.0 / 3.0, 1e-12);
  EXPECT_EQ(r.value().grad_logp[3], 0.0);
  // Token (0,1) is unclipped: ∂/∂logp = w·(−A·ρ + coef·(1 − r)) = 0.25·(−1 + 0).
  EXPECT_NEAR(r.value().grad_logp[1], -0.25, 1e-12);

  PolicyLossOptions token_mean;
  token_mean.aggregation = LossAggregation::kTokenMean;
  token_mean.kl.coef = 0.0;
  in.ref_logp = {};
  auto t = policy_loss(in, token_mean);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_NEAR(t.value().loss, (-1.2 - 1.0 + 0.8) / 3.0, 1e-12);
  EXPECT_EQ(t.value().kl, 0.0);
}

TEST(PolicyLoss, PerTokenAdvantagesEqualBroadcastSequenceAdvantages) {
  const std::vector<double> logp = {-0.1, -0.2, -0.3, -0.4};
  const std::vector<double> old = {-0.2, -0.2, -0.1, -0.4};
  const std::vector<std::uint8_t> mask = {1, 1, 1, 1};
  PolicyLossOptions o;
  o.kl.coef = 0.0;
  auto seq = policy_loss({{2, 2}, logp, old, {}, std::vector<double>{0.5, -2.0}, mask}, o);
  auto tok = policy_loss({{2, 2}, logp, old, {}, std::vector<double>{0.5, 0.5, -2.0, -2.0}, mask}, o);
  ASSERT_TRUE(seq.ok() && tok.ok());
  EXPECT_DOUBLE_EQ(seq.value().loss, tok.value().loss);
}

TEST(PolicyLoss, Errors) {
  const std::vector<double> v = {0, 0, 0, 0};
  const std::vector<double> adv = {1, 1};
  const std::vector<std::uint8_t> mask = {1, 1, 1, 1};
  EXPECT_FALSE(policy_loss({{2, 2}, v, v, {}, adv, mask}).ok());  // coef 0.04 but no ref
  EXPECT_FALSE(policy_loss({{2, 2}, v, std::vector<double>{0, 0}, v, adv, mask}).ok());
  EXPECT_FALSE(policy_loss({{2, 2}, v, v, v, std::vector<double>{1, 1, 1}, mask}).ok());
  PolicyLossOptions bad;
  bad.clip.eps_low = 1.0;
  EXPECT_FALSE(policy_loss({{2, 2}, v, v, v, adv, mask}, bad).ok());
  bad = {};
  bad.kl.coef = -0.1;
  EXPECT_FALSE(policy_loss({{2, 2}, v, v, v, adv, mask}, bad).ok());
  const std::vector<double> nan_adv = {1, NAN};
  EXPECT_FALSE(policy_loss({{2, 2}, v, v, v, nan_adv, mask}).ok());
  EXPECT_TRUE(policy_loss({{2, 2}, v, v, v, adv, mask}).ok());
}

}  // namespace
}  // namespace musacoder::rl
