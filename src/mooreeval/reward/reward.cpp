#include "mooreeval/reward/reward.h"

#include <algorithm>

namespace musacoder::reward {

Result<Scheme> parse_scheme(const std::string& name) {
  if (name == "lesson") return Scheme::kLesson;
  if (name == "tiered") return Scheme::kTiered;
  if (name == "kevin") return Scheme::kKevin;
  return invalid_argument("unknown reward scheme '" + name + "' (expected lesson, tiered or kevin)");
}

const char* scheme_name(Scheme s) {
  switch (s) {
    case Scheme::kLesson:
      return "lesson";
    case Scheme::kTiered:
      return "tiered";
    case Scheme::kKevin:
      return "kevin";
  }
  return "?";
}

RewardBreakdown compute_reward(const RewardInputs& in, const RewardOptions& o) {
  if (!in.legal) return compute_reward(RewardInputs{}, o);  // a hack earns nothing
  RewardBreakdown r;
  const double q = std::clamp(in.pass_fraction, 0.0, 1.0);
  const bool all_pass = in.compiled && in.ran && q >= 1.0;
  const double speedup = all_pass && in.speedup ? std::max(*in.speedup, 0.0) : 0.0;
  switch (o.scheme) {
    case Scheme::kLesson: {
      r.compile_part = in.compiled ? 0.2 : 0.0;
      r.correctness_part = in.compiled ? 0.4 * q : 0.0;
      r.performance_part = all_pass && o.speedup_cap > 0 ? 0.4 * std::min(speedup / o.speedup_cap, 1.0) : 0.0;
      r.total = r.compile_part + r.correctness_part + r.performance_part;
      break;
    }
    case Scheme::kTiered:
      if (!in.compiled || !in.ran) {
        r.total = -1.0;
      } else if (!all_pass) {
        r.total = -0.5 + 0.5 * q;
      } else {
        r.total = 1.0 + o.tiered_lambda * std::min(std::max(speedup - 1.0, 0.0), o.tiered_nu_max);
      }
      break;
    case Scheme::kKevin:
      r.total = all_pass ? 0.3 + speedup : 0.0;
      break;
  }
  return r;
}

}  // namespace musacoder::reward
