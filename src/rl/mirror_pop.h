#pragma once
// MirrorPop (DESIGN §5, lesson §六): late in training many samples teach nothing new. They are "learned"
// and most of them are dropped from the update, saving compute (lesson: 25–35%).
//
// Lesson mode (MirrorPop class, default). Per sample the trainer supplies the divergence between the
// current and the mirror policy (mirror_schedule.h; e.g. sequence_divergence() below) and its group's
// pass rate. A sample is learned when
//     divergence < tau (--mirrorpop-tau 0.02)  AND  group_pass_rate ≥ learned_pass_rate (0.75)
// (a quiet divergence alone is not "solved": all-fail prompts are quiet too). Per batch:
//   1. each learned sample is a re-check with probability p_recheck (kept anyway, so forgetting shows);
//   2. of the other learned samples a uniformly random subset is dropped; its size makes the kept
//      learned samples (re-checks included) at most max_learned_share of the kept batch. p_skip, the
//      drop probability of a non-re-check learned sample, is recomputed from every batch's counts —
//      a dead-beat controller: the share target holds batch by batch instead of on average.
//   Guarantee: learned_share_kept ≤ max_learned_share whenever the re-checks fit in the allowance
//   R ≤ ⌊s/(1−s)·U⌋ (s = max_learned_share, U = unlearned samples in the batch). Otherwise (a batch of
//   almost only learned samples) the re-checks are still kept — an update batch must not come out
//   empty — and the batch is reported with ceiling_met = false.
// All draws come from std::mt19937_64 seeded by (seed, batch index): reproducible, and a resumed run only
// needs the saved counters (restore_counters()) to continue the same stream.
//
// Paper mode (paper_sequence_mask): M_i = 1[ mean_t |log ρ_i,t| ≤ δ ] over the valid tokens of sequence i,
// ρ = trainer/rollout probability ratio; sequences with M_i = 0 are masked out of the loss.
//
// Thread-safety: MirrorPop is not thread-safe (one trainer thread); the free functions are pure.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rl/loss_aggregation.h"
#include "rl/mirror_schedule.h"
#include "rl/policy_loss.h"
#include "core/check.h"
#include "core/status.h"

namespace musacoder::rl {

struct MirrorPopOptions {
  // Divergence below this is "quiet" (--mirrorpop-tau). ≥ 0.
  double tau = 0.02;
  // A quiet sample is learned only if its group's pass rate is at least this. In [0, 1].
  double learned_pass_rate = 0.75;
  // Ceiling on learned samples among the kept batch (lesson: 30%). In [0, 1]; 1 disables dropping.
  double max_learned_share = 0.30;
  // A learned sample is kept anyway with this probability. In [0, 1].
  double p_recheck = 0.05;
  // Seed of the drop/re-check draws.
  std::uint64_t seed = 0;
};

struct SampleSignal {
  double divergence = 0.0;       // current vs mirror policy on this sample (finite)
  double group_pass_rate = 0.0;  // passing share of the sample's prompt group, in [0, 1]
  std::size_t tokens = 0;        // tokens the update would spend on it (for compute_saved)
};

enum class SampleDecision : std::uint8_t {
  kKeep,         // not learned
  kRecheck,      // learned, kept by the re-check draw
  kKeepLearned,  // learned, kept because the share ceiling allows it
  kSkip,         // learned, dropped
};

struct MirrorPopBatch {
  std::vector<SampleDecision> decisions;  // one per sample
  std::vector<std::uint8_t> keep;         // 1 = train on the sample (decision != kSkip)
  std::size_t learned = 0;
  std::size_t rechecked = 0;
  std::size_t skipped = 0;
  std::size_t kept = 0;
  double p_skip = 0.0;              // drop probability used for non-re-check learned samples
  double learned_share_seen = 0.0;  // learned / batch size
  double learned_share_kept = 0.0;  // learned kept / kept (0 for an empty kept batch)
  bool ceiling_met = true;          // learned_share_kept ≤ max_learned_share (false only when the
                                    // re-checks alone exceed the allowance)
};

struct MirrorPopCounters {
  std::size_t batches = 0;
  std::size_t samples_seen = 0;
  std::size_t learned = 0;
  std::size_t skipped = 0;
  std::size_t rechecked = 0;
  std::size_t kept_learned = 0;    // learned samples kept (re-checks included)
  std::size_t ceiling_missed = 0;  // batches whose re-checks alone exceeded the share ceiling
  std::size_t tokens_seen = 0;
  std::size_t tokens_skipped = 0;

  double samples_saved() const;  // skipped / samples_seen
  double compute_saved() const;  // tokens_skipped / tokens_seen (lesson: 25–35%)
};

class MirrorPop {
 public:
  // Errors (invalid): an option outside its documented range.
  static Result<MirrorPop> create(const MirrorPopOptions& options = {});

  // Decides which samples of one batch to keep. Errors (invalid): a non-finite divergence or a pass rate
  // outside [0, 1]; on error no state changes. An empty batch is fine (no draws, still counted).
  Result<MirrorPopBatch> filter(std::span<const SampleSignal> batch);

  bool is_learned(const SampleSignal& sample) const;
  double p_skip() const { return p_skip_; }  // of the latest batch with learned samples
  std::size_t batches_seen() const { return counters_.batches; }
  // For a resumed run: counters saved from counters() (their batch index continues the draw stream).
  void restore_counters(const MirrorPopCounters& counters) { counters_ = counters; }
  const MirrorPopCounters& counters() const { return counters_; }
  const MirrorPopOptions& options() const { return options_; }

 private:
  explicit MirrorPop(const MirrorPopOptions& options) : options_(options) {}
  MirrorPopOptions options_;
  MirrorPopCounters counters_;
  double p_skip_ = 0.0;
};

// Per-sequence mean over valid tokens of a KL estimate between current and mirror policy, from the
// log-probs each assigns to the sampled tokens: the lesson-mode divergence. (B,T) inputs, returns (B).
// A row without valid tokens gets 0. Errors (invalid): sizes; a non-finite value under the mask.
Result<std::vector<double>> sequence_divergence(std::span<const double> logp,
                                                std::span<const double> mirror_logp,
                                                std::span<const std::uint8_t> mask, TokenBatchShape shape,
                                                KlEstimator estimator = KlEstimator::kK3);

// Paper mode: (B) mask, 1 = keep sequence, from (B,T) log_ratio = log π_trainer − log π_rollout.
// A row without valid tokens gets 0 (nothing to train). delta: tolerated mean |log ρ| (not given in the
// lesson). Errors (invalid): sizes; delta < 0 or NaN; a non-finite log-ratio under the mask.
Result<std::vector<std::uint8_t>> paper_sequence_mask(std::span<const double> log_ratio,
                                                      std::span<const std::uint8_t> mask,
                                                      TokenBatchShape shape, double delta = 0.05);

}  // namespace musacoder::rl
