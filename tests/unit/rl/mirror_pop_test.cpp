#include "rl/mirror_pop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace musacoder::rl {
namespace {

MirrorPop make(MirrorPopOptions o = {}) {
  auto m = MirrorPop::create(o);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(m).value();
}

constexpr SampleSignal kLearned{0.001, 1.0, 100};
constexpr SampleSignal kNew{0.5, 0.5, 100};

TEST(EmaSchedule, CopyFirstThenEveryN) {
  auto s = EmaSchedule::create({/*start_step=*/5, /*update_every=*/3, /*decay=*/0.9});
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s.value().decay_at(0).has_value());
  EXPECT_FALSE(s.value().decay_at(4).has_value());
  EXPECT_EQ(s.value().decay_at(5), 0.0);
  EXPECT_FALSE(s.value().decay_at(6).has_value());
  EXPECT_EQ(s.value().decay_at(8), 0.9);
  EXPECT_EQ(s.value().decay_at(11), 0.9);
  EXPECT_FALSE(EmaSchedule::create({0, 0, 0.5}).ok());
  EXPECT_FALSE(EmaSchedule::create({0, 1, 1.0}).ok());
}

TEST(EmaUpdate, BlendsAndCopies) {
  std::vector<float> mirror = {NAN, 2.0f};
  const std::vector<float> current = {1.0f, 4.0f};
  ASSERT_TRUE(ema_update(mirror, current, 0.0).ok());  // copy, even over NaN
  EXPECT_EQ(mirror, current);
  mirror = {0.0f, 2.0f};
  ASSERT_TRUE(ema_update(mirror, current, 0.75).ok());  // 0.75·m + 0.25·c
  EXPECT_FLOAT_EQ(mirror[0], 0.25f);
  EXPECT_FLOAT_EQ(mirror[1], 2.5f);
  EXPECT_FALSE(ema_update(mirror, std::vector<float>{1.0f}, 0.5).ok());
  EXPECT_FALSE(ema_update(mirror, current, 1.5).ok());
  EXPECT_FLOAT_EQ(mirror[1], 2.5f);
}

TEST(MirrorPop, LearnedNeedsQuietDivergenceAndHighPassRate) {
  MirrorPop m = make();
  EXPECT_TRUE(m.is_learned({0.019, 0.75, 1}));
  EXPECT_FALSE(m.is_learned({0.02, 1.0, 1}));  // divergence not below tau
  EXPECT_FALSE(m.is_learned({0.0, 0.74, 1}));  // quiet but not solved (all-fail prompts are quiet too)
  EXPECT_FALSE(m.is_learned({0.0, 0.0, 1}));
}

// 7 new + 10 learned, no re-checks: at most floor(0.3/0.7·7) = 3 learned may stay (3/10 = 30%).
TEST(MirrorPop, KeepsExactlyTheAllowedLearnedSamples) {
  MirrorPopOptions o;
  o.p_recheck = 0.0;
  MirrorPop m = make(o);
  std::vector<SampleSignal> batch(7, kNew);
  batch.insert(batch.end(), 10, kLearned);
  auto r = m.filter(batch);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const MirrorPopBatch& b = r.value();
  EXPECT_EQ(b.learned, 10u);
  EXPECT_EQ(b.skipped, 7u);
  EXPECT_EQ(b.kept, 10u);
  EXPECT_NEAR(b.p_skip, 0.7, 1e-12);
  EXPECT_NEAR(b.learned_share_kept, 0.3, 1e-12);
  EXPECT_NEAR(b.learned_share_seen, 10.0 / 17.0, 1e-12);
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(b.decisions[i], SampleDecision::kKeep);
  EXPECT_EQ(m.counters().tokens_skipped, 700u);
  EXPECT_NEAR(m.counters().compute_saved(), 7.0 / 17.0, 1e-12);
  EXPECT_NEAR(m.counters().samples_saved(), 7.0 / 17.0, 1e-12);
}

TEST(MirrorPop, NothingIsDroppedWhileTheShareIsBelowTheCeiling) {
  MirrorPop m = make();
  std::vector<SampleSignal> batch(10, kNew);
  batch.push_back(kLearned);
  auto r = m.filter(batch);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().skipped, 0u);
  EXPECT_EQ(r.value().p_skip, 0.0);
}

TEST(MirrorPop, AllLearnedBatchKeepsOnlyRechecks) {
  MirrorPopOptions o;
  o.p_recheck = 1.0;
  MirrorPop always = make(o);
  auto r = always.filter(std::vector<SampleSignal>(20, kLearned));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().rechecked, 20u);
  EXPECT_EQ(r.value().skipped, 0u);
  o.p_recheck = 0.0;
  MirrorPop never = make(o);
  auto s = never.filter(std::vector<SampleSignal>(20, kLearned));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value().kept, 0u);
  EXPECT_EQ(s.value().learned_share_kept, 0.0);
}

TEST(MirrorPop, DeterministicGivenSeedAndBatchIndex) {
  std::mt19937_64 rng(1);
  std::vector<SampleSignal> batch;
  for (int i = 0; i < 200; ++i) batch.push_back(rng() % 2 == 0 ? kLearned : kNew);
  MirrorPopOptions o;
  o.seed = 42;
  MirrorPop a = make(o), b = make(o);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.filter(batch).value().keep, b.filter(batch).value().keep);
  MirrorPop fresh = make(o);
  (void)fresh.filter(batch);
  (void)fresh.filter(batch);
  MirrorPop resumed = make(o);
  resumed.restore_counters(fresh.counters());
  EXPECT_EQ(resumed.batches_seen(), 2u);
  EXPECT_EQ(resumed.filter(batch).value().keep, fresh.filter(batch).value().keep);
  o.seed = 43;
  MirrorPop other = make(o);
  EXPECT_NE(other.filter(batch).value().keep, make({.seed = 42}).filter(batch).value().keep);
}

// Property: over random batches the kept learned share never exceeds the ceiling unless the re-checks
// alone do, and re-checks happen at about p_recheck.
TEST(MirrorPop, CeilingHoldsOverRandomBatches) {
  std::mt19937_64 rng(8);
  MirrorPop m = make({.seed = 8});
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<SampleSignal> batch;
    const std::size_t n = 1 + rng() % 300;
    const double learned_rate = static_cast<double>(rng() % 101) / 100.0;
    for (std::size_t i = 0; i < n; ++i) {
      batch.push_back(static_cast<double>(rng() % 1000) / 1000.0 < learned_rate ? kLearned : kNew);
    }
    auto r = m.filter(batch);
    ASSERT_TRUE(r.ok());
    const MirrorPopBatch& b = r.value();
    const std::size_t unlearned = n - b.learned;
    const std::size_t allowed = static_cast<std::size_t>(std::floor(0.3 / 0.7 * unlearned + 1e-9));
    EXPECT_EQ(b.ceiling_met, b.rechecked <= allowed);
    if (b.ceiling_met) {
      EXPECT_LE(b.learned_share_kept, 0.3 + 1e-12);
    }
    EXPECT_EQ(b.kept + b.skipped, n);
  }
  const double recheck_rate = static_cast<double>(m.counters().rechecked) / m.counters().learned;
  EXPECT_NEAR(recheck_rate, 0.05, 0.01);
}

TEST(MirrorPop, Errors) {
  EXPECT_FALSE(MirrorPop::create({.tau = -1.0}).ok());
  EXPECT_FALSE(MirrorPop::create({.max_learned_share = 1.5}).ok());
  EXPECT_FALSE(MirrorPop::create({.p_recheck = -0.1}).ok());
  MirrorPop m = make();
  EXPECT_FALSE(m.filter(std::vector<SampleSignal>{{NAN, 1.0, 1}}).ok());
  EXPECT_FALSE(m.filter(std::vector<SampleSignal>{{0.0, 1.5, 1}}).ok());
  EXPECT_EQ(m.counters().samples_seen, 0u);
  EXPECT_EQ(m.batches_seen(), 0u);
}

TEST(SequenceDivergence, MeanTokenK3) {
  // Row 0: tokens with log r = 0 and 0.5 → (0 + e^0.5 − 1.5)/2; row 1: padding only → 0.
  const std::vector<double> logp = {-1.0, -2.0, -1.0, -1.0};
  const std::vector<double> mirror = {-1.0, -1.5, 7.0, 7.0};
  const std::vector<std::uint8_t> mask = {1, 1, 0, 0};
  auto d = sequence_divergence(logp, mirror, mask, {2, 2});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_NEAR(d.value()[0], (std::exp(0.5) - 1.5) / 2.0, 1e-12);
  EXPECT_EQ(d.value()[1], 0.0);
  EXPECT_FALSE(sequence_divergence(logp, std::vector<double>{1.0}, mask, {2, 2}).ok());
}

TEST(PaperSequenceMask, MeanAbsLogRatioAgainstDelta) {
  // δ = 0.125. Row 0: mean |log ρ| = (0.01 + 0.03)/2 = 0.02 → keep. Row 1: (0.125 + 0.125)/2 = δ exactly →
  // keep (≤). Row 2: 0.25 (its second token is padding) → mask. Row 3: no valid tokens → mask.
  const std::vector<double> lr = {0.01, -0.03, 0.125, -0.125, 0.25, 0.25, 9.0, NAN};
  const std::vector<std::uint8_t> mask = {1, 1, 1, 1, 1, 0, 0, 0};
  auto m = paper_sequence_mask(lr, mask, {4, 2}, 0.125);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m.value(), (std::vector<std::uint8_t>{1, 1, 0, 0}));
  auto strict = paper_sequence_mask(lr, mask, {4, 2}, 0.01);
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict.value(), (std::vector<std::uint8_t>{0, 0, 0, 0}));
  EXPECT_FALSE(paper_sequence_mask(lr, mask, {4, 2}, -1.0).ok());
  EXPECT_FALSE(paper_sequence_mask(lr, mask, {3, 2}, 0.1).ok());
}

}  // namespace
}  // namespace musacoder::rl
