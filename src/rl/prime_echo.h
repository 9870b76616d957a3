#pragma once
// PrimeEcho: first-turn anchored rewards for multi-turn kernel repair (DESIGN §3, lesson §四).
// A trajectory is the MooreEval score of each turn: turn 1 writes v1, MooreEval feedback goes back to the
// model, turn 2 writes v2, … Naive per-turn rewards pay the model to fail on purpose in turn 1 and "repair"
// in turn 2; PrimeEcho pays most of any later improvement back to turn 1.
//
// Lesson rule (default; γ = --prime-echo-gamma 0.7, η = --prime-echo-eta 0.5), s = turn scores:
//   r[0] = s0;  for i ≥ 1: δ = max(s_i − s0, 0);  r[0] += γ·δ·η;  r[i] = (1 − η)·δ
//   e.g. s = [0.2, 0.9] → r = [0.2 + 0.7·0.7·0.5, 0.5·0.7] = [0.445, 0.35]. Every turn is trained.
//
// Paper variant (option): one trajectory reward on the first turn only,
//   R = α·s_first + (1 − α)·max_k s_k + b_early        (α = 0.75)
//   b_early = early_bonus[j] when the first success (score ≥ pass_threshold) is at turn j+1, else 0.
//   r = [R, 0, …], train_mask = [1, 0, …] (the "gradient mask": only the first response gets gradient).
//
// should_continue() is the rollout loop's stop rule: at most max_turns turns, and stop after a pass.
//
// Thread-safety: pure functions.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/check.h"
#include "core/status.h"

namespace musacoder::rl {

enum class PrimeEchoMode {
  kLesson,  // the lesson's echo rule (default)
  kPaper,   // α-anchored trajectory reward with early bonus, first turn trained only
};

struct PrimeEchoOptions {
  // Which reward rule.
  PrimeEchoMode mode = PrimeEchoMode::kLesson;
  // Lesson: discount on improvement echoed back to turn 1 (--prime-echo-gamma). In [0, 1].
  double gamma = 0.7;
  // Lesson: share of an improvement that flows back towards turn 1 (--prime-echo-eta). In [0, 1].
  double eta = 0.5;
  // Paper: weight of the first turn's score against the best score of the trajectory. In [0, 1].
  double alpha = 0.75;
  // Paper: early_bonus[j] is added when the first passing turn is turn j+1 (default: turn 1 → 0.1,
  // turn 2 → 0.05, later → 0). Values chosen here, not given by the lesson; must be finite.
  std::vector<double> early_bonus = {0.1, 0.05};
  // A turn passes when its score ≥ this. 0.6 = compiled (0.2) + all checks pass (0.4) under MooreEval's
  // default reward; use 1.0 with the paper's tiered score.
  double pass_threshold = 0.6;
  // Longest trajectory the rollout produces (paper: ≤ 3). Longer trajectories are rejected. ≥ 1.
  std::size_t max_turns = 3;
  // should_continue() stops once a turn passes.
  bool stop_early_on_pass = true;
};

struct PrimeEchoRewards {
  std::vector<double> turn_reward;       // one reward per turn
  std::vector<std::uint8_t> train_mask;  // 1 = the turn's response gets gradient
};

// turn_scores: MooreEval score per turn, turn 1 first.
// Errors (invalid): empty trajectory; more than max_turns turns; a non-finite score; options out of range.
Result<PrimeEchoRewards> prime_echo_rewards(std::span<const double> turn_scores,
                                            const PrimeEchoOptions& options = {});

// Whether the rollout should ask for another turn given the scores so far. An empty trajectory → true.
// Never errors; non-finite scores count as not passing.
bool should_continue(std::span<const double> turn_scores, const PrimeEchoOptions& options = {});

}  // namespace musacoder::rl
