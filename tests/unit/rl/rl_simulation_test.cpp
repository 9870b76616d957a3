// End-to-end simulation of the RL step's data path (DESIGN §1) with a synthetic policy instead of a model:
// 200 prompts, K = 8 samples each, pass probability sigmoid(skill_j). Training on a prompt's group raises its
// skill a lot and every prompt's skill a little (generalisation), so prompts that fail everything early
// become solvable later — exactly the groups BDR exists to bring back. The mirror policy is an EMA of the
// skill vector, and MirrorPop drops samples the policy has already learned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "rl/advantages.h"
#include "rl/mirror_pop.h"
#include "rl/retry_buffer.h"

namespace musacoder::rl {
namespace {

constexpr std::size_t kPrompts = 200;
constexpr std::size_t kGroup = 8;
constexpr std::size_t kPromptsPerStep = 20;  // 10 steps per epoch
constexpr std::size_t kSteps = 100;
constexpr std::size_t kWarmupSteps = 10;
constexpr float kInitSkillLow = -6.0f, kInitSkillHigh = 2.0f;  // initial logit of each prompt's pass prob
constexpr float kTrainGain = 0.5f;                             // skill gained by the trained prompt
constexpr float kGeneralisation = 0.003f;             // skill gained by every prompt per trained group
constexpr double kPassScore = 1.0, kFailScore = 0.2;  // pass_threshold 0.6 separates them

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

struct Sim {
  std::mt19937_64 rng{2024};
  std::vector<float> skill = std::vector<float>(kPrompts);
  std::vector<float> mirror = std::vector<float>(kPrompts);

  ScoredGroup sample(std::size_t prompt) {
    ScoredGroup g{"kb/" + std::to_string(prompt), {}};
    const double p = sigmoid(skill[prompt]);
    for (std::size_t i = 0; i < kGroup; ++i) {
      const bool pass = detail_uniform() < p;
      g.attempts.push_back({"kernel", pass ? "ok" : "wrong_answer", pass ? kPassScore : kFailScore});
    }
    return g;
  }
  double detail_uniform() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
  double divergence(std::size_t prompt) {
    return std::abs(sigmoid(skill[prompt]) - sigmoid(mirror[prompt])) + 0.005 * detail_uniform();
  }
};

std::size_t prompt_of(const ScoredGroup& g) {
  return std::stoul(g.prompt_id.substr(3));
}

std::vector<double> rewards_of(const ScoredGroup& g) {
  std::vector<double> r;
  for (const Attempt& a : g.attempts) r.push_back(a.score);
  return r;
}

bool has_signal(const ScoredGroup& g) {
  const auto adv = group_advantages(rewards_of(g), kGroup).value();
  return std::any_of(adv.begin(), adv.end(), [](double a) { return a != 0.0; });
}

TEST(RlSimulation, MirrorPopAndBdrOnASyntheticPolicy) {
  Sim sim;
  std::uniform_real_distribution<float> init(kInitSkillLow, kInitSkillHigh);
  for (float& s : sim.skill) s = init(sim.rng);

  RetryBufferOptions bdr_options;
  bdr_options.retry_every = 2;
  bdr_options.max_retries_per_step = 8;
  RetryBuffer bdr = RetryBuffer::create(bdr_options).value();
  MirrorPop pop = MirrorPop::create({.seed = 7}).value();
  const EmaSchedule schedule =
      EmaSchedule::create({.start_step = 0, .update_every = 5, .decay = 0.5}).value();

  std::vector<std::size_t> order(kPrompts);
  std::iota(order.begin(), order.end(), 0);
  double max_kept_share_after_warmup = 0.0, mean_kept_share_after_warmup = 0.0, late_seen_share = 0.0;
  std::size_t batches_after_warmup = 0, ceiling_missed = 0, late_batches = 0, recovered_with_signal = 0,
              recovered_all_pass = 0;

  for (std::size_t step = 0; step < kSteps; ++step) {
    if (step % (kPrompts / kPromptsPerStep) == 0) {
      if (step > 0) bdr.advance_epoch();
      std::shuffle(order.begin(), order.end(), sim.rng);
    }
    if (auto decay = schedule.decay_at(step)) {
      ASSERT_TRUE(ema_update(sim.mirror, sim.skill, *decay).ok());
    }

    // Regular rollouts; all-fail groups go to the buffer (and indeed carry no gradient).
    std::vector<ScoredGroup> update;
    const std::size_t first = (step * kPromptsPerStep) % kPrompts;
    for (std::size_t i = 0; i < kPromptsPerStep; ++i) {
      ScoredGroup g = sim.sample(order[first + i]);
      const OfferOutcome outcome = bdr.offer(g).value();
      if (outcome == OfferOutcome::kHasSignal) {
        update.push_back(std::move(g));
      } else {
        ASSERT_FALSE(has_signal(g));
      }
    }
    // Retry round: buffered prompts re-sampled with the current policy.
    for (const std::string& id : bdr.due(step)) {
      ScoredGroup g = sim.sample(std::stoul(id.substr(3)));
      if (bdr.report_retry(g).value() == RetryOutcome::kRecovered) {
        (has_signal(g) ? recovered_with_signal : recovered_all_pass) += 1;
        update.push_back(std::move(g));
      }
    }
    bdr.record_update_groups(update.size());

    // MirrorPop over every sample of the update.
    std::vector<SampleSignal> signals;
    for (const ScoredGroup& g : update) {
      const std::size_t j = prompt_of(g);
      const double pass_rate =
          static_cast<double>(std::count_if(g.attempts.begin(), g.attempts.end(),
                                            [](const Attempt& a) { return a.score >= 0.6; })) /
          kGroup;
      for (std::size_t i = 0; i < kGroup; ++i)
        signals.push_back({sim.divergence(j), pass_rate, 100 + j % 50});
    }
    const MirrorPopBatch batch = pop.filter(signals).value();
    if (step >= kWarmupSteps) {
      ++batches_after_warmup;
      mean_kept_share_after_warmup += batch.learned_share_kept;
      if (batch.ceiling_met) {
        max_kept_share_after_warmup = std::max(max_kept_share_after_warmup, batch.learned_share_kept);
      } else {
        ++ceiling_missed;
      }
    }
    if (step >= kSteps / 2) {
      late_seen_share += batch.learned_share_seen;
      ++late_batches;
    }

    // "Gradient step": a group with signal and at least one kept sample trains its prompt.
    for (std::size_t gi = 0; gi < update.size(); ++gi) {
      const bool kept = std::any_of(batch.keep.begin() + static_cast<std::ptrdiff_t>(gi * kGroup),
                                    batch.keep.begin() + static_cast<std::ptrdiff_t>((gi + 1) * kGroup),
                                    [](std::uint8_t k) { return k != 0; });
      if (!kept || !has_signal(update[gi])) continue;
      sim.skill[prompt_of(update[gi])] += kTrainGain;
      for (float& s : sim.skill) s += kGeneralisation;
    }
  }

  const RetryBufferCounters bdr_counters = bdr.counters();
  const MirrorPopCounters& pop_counters = pop.counters();
  std::cout << "[sim] BDR: entered " << bdr_counters.entered << ", recovered "
            << bdr_counters.recovered_groups << " (with signal " << recovered_with_signal
            << "), share of update groups " << bdr_counters.recovered_share() << ", evicted stale "
            << bdr_counters.evicted_stale << ", buffered now " << bdr_counters.buffered << "\n"
            << "[sim] MirrorPop: learned share seen (late) " << late_seen_share / late_batches
            << ", kept share after warm-up: mean " << mean_kept_share_after_warmup / batches_after_warmup
            << ", max " << max_kept_share_after_warmup << " (ceiling missed in " << ceiling_missed
            << " batches), compute saved " << pop_counters.compute_saved() << ", rechecked "
            << pop_counters.rechecked << "\n";

  // MirrorPop: without it the late batches are mostly learned samples; with it the kept batch holds at
  // most 30% learned ones (except in the rare batch whose re-checks alone exceed that), and real compute
  // is saved.
  EXPECT_GT(late_seen_share / late_batches, 0.5);
  EXPECT_LE(max_kept_share_after_warmup, 0.30 + 1e-12);
  EXPECT_LE(mean_kept_share_after_warmup / batches_after_warmup, 0.30);
  EXPECT_LE(ceiling_missed, batches_after_warmup / 20);
  EXPECT_GT(pop_counters.compute_saved(), 0.15);
  EXPECT_GT(pop_counters.rechecked, 0u);
  // BDR: groups that had zero gradient come back with signal and form a visible share of the updates.
  EXPECT_GT(recovered_with_signal, 0u);
  EXPECT_GT(bdr_counters.recovered_share(), 0.02);
  EXPECT_LT(bdr_counters.recovered_share(), 0.5);
  EXPECT_EQ(bdr_counters.recovered_groups, recovered_with_signal + recovered_all_pass);
}

}  // namespace
}  // namespace musacoder::rl
