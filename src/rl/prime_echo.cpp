#include "rl/prime_echo.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace musacoder::rl {
namespace {

bool in_unit_interval(double x) {
  return x >= 0.0 && x <= 1.0;
}

Status validate(std::span<const double> scores, const PrimeEchoOptions& o) {
  if (!in_unit_interval(o.gamma) || !in_unit_interval(o.eta) || !in_unit_interval(o.alpha)) {
    return invalid_argument("prime_echo: gamma, eta and alpha must lie in [0, 1]");
  }
  if (o.max_turns == 0) return invalid_argument("prime_echo: max_turns must be >= 1");
  if (!std::isfinite(o.pass_threshold)) return invalid_argument("prime_echo: pass_threshold must be finite");
  for (double b : o.early_bonus) {
    if (!std::isfinite(b)) return invalid_argument("prime_echo: early_bonus values must be finite");
  }
  if (scores.empty()) return invalid_argument("prime_echo: empty trajectory");
  if (scores.size() > o.max_turns) {
    return invalid_argument("prime_echo: trajectory has " + std::to_string(scores.size()) +
                           " turns, max_turns is " + std::to_string(o.max_turns));
  }
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (!std::isfinite(scores[i])) {
      return invalid_argument("prime_echo: score of turn " + std::to_string(i + 1) + " is not finite");
    }
  }
  return Status();
}

PrimeEchoRewards lesson_rewards(std::span<const double> s, const PrimeEchoOptions& o) {
  PrimeEchoRewards out;
  out.turn_reward.assign(s.size(), 0.0);
  out.train_mask.assign(s.size(), 1);
  out.turn_reward[0] = s[0];
  for (std::size_t i = 1; i < s.size(); ++i) {
    const double delta = std::max(s[i] - s[0], 0.0);
    out.turn_reward[0] += o.gamma * delta * o.eta;
    out.turn_reward[i] = (1.0 - o.eta) * delta;
  }
  return out;
}

PrimeEchoRewards paper_rewards(std::span<const double> s, const PrimeEchoOptions& o) {
  const double best = *std::max_element(s.begin(), s.end());
  double bonus = 0.0;
  for (std::size_t j = 0; j < s.size(); ++j) {
    if (s[j] >= o.pass_threshold) {
      bonus = j < o.early_bonus.size() ? o.early_bonus[j] : 0.0;
      break;
    }
  }
  PrimeEchoRewards out;
  out.turn_reward.assign(s.size(), 0.0);
  out.train_mask.assign(s.size(), 0);
  out.turn_reward[0] = o.alpha * s[0] + (1.0 - o.alpha) * best + bonus;
  out.train_mask[0] = 1;
  return out;
}

}  // namespace

Result<PrimeEchoRewards> prime_echo_rewards(std::span<const double> turn_scores,
                                            const PrimeEchoOptions& options) {
  if (Status s = validate(turn_scores, options); !s.ok()) return s;
  switch (options.mode) {
    case PrimeEchoMode::kLesson:
      return lesson_rewards(turn_scores, options);
    case PrimeEchoMode::kPaper:
      return paper_rewards(turn_scores, options);
  }
  return invalid_argument("prime_echo: unknown mode");
}

bool should_continue(std::span<const double> turn_scores, const PrimeEchoOptions& options) {
  if (turn_scores.size() >= options.max_turns) return false;
  if (turn_scores.empty()) return true;
  return !(options.stop_early_on_pass && turn_scores.back() >= options.pass_threshold);
}

}  // namespace musacoder::rl
