// Reward schemes (DESIGN.md §2.6). All take the same facts about one evaluated candidate.
//
//   lesson (default): 0.2*compiled + 0.4*pass_fraction + 0.4*perf, perf = min(speedup/cap, 1)
//                     when every trial passed, else 0. Total <= 1.
//   tiered (paper):   -1 on failure to compile or run; -0.5 + 0.5*q when only a fraction q of
//                     the trials pass; 1 + lambda*min(max(speedup-1, 0), nu_max) when all pass.
//   kevin:            0.3*correct + speedup*correct (Kevin-32B).
#pragma once

#include <optional>
#include <string>

#include "core/status.h"

namespace musacoder::reward {

enum class Scheme { kLesson, kTiered, kKevin };

Result<Scheme> parse_scheme(const std::string& name);
const char* scheme_name(Scheme s);

struct RewardOptions {
  Scheme scheme = Scheme::kLesson;
  double speedup_cap = 1.0;    // lesson: speedup at which perf saturates (--reward-speedup-cap)
  double tiered_lambda = 0.5;  // tiered: weight of the speedup bonus
  double tiered_nu_max = 2.0;  // tiered: cap of the speedup bonus term
};

struct RewardInputs {
  bool compiled = false;          // the build succeeded
  bool ran = false;               // the candidate ran to completion on every trial
  double pass_fraction = 0.0;     // trials within tolerance / trials
  std::optional<double> speedup;  // reference median / candidate median, only at 100% pass
  bool legal = true;              // false: it broke a legality rule (fallback, reference call, timing hack)
};

struct RewardBreakdown {
  double total = 0.0;
  double compile_part = 0.0;  // lesson scheme's three parts; other schemes fill `total` only
  double correctness_part = 0.0;
  double performance_part = 0.0;
};

// The reward of one candidate. The policy every scheme shares: an illegal candidate earns exactly what one that
// never compiled earns, whatever it compiled, passed or timed (a hack earns nothing).
RewardBreakdown compute_reward(const RewardInputs& in, const RewardOptions& options);

}  // namespace musacoder::reward
