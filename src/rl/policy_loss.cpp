#include "rl/policy_loss.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace musacoder::rl {

PpoTokenTerm ppo_clip_token(double logp, double old_logp, double advantage, const PpoClipOptions& options) {
  PpoTokenTerm term;
  term.ratio = std::exp(logp - old_logp);
  const double clipped_ratio = std::clamp(term.ratio, 1.0 - options.eps_low, 1.0 + options.eps_high);
  const double unclipped = term.ratio * advantage;
  const double surrogate = clipped_ratio * advantage;
  term.clipped_high = advantage > 0.0 && term.ratio > 1.0 + options.eps_high;
  term.clipped_low = advantage < 0.0 && term.ratio < 1.0 - options.eps_low;
  term.clipped = term.clipped_high || term.clipped_low;
  term.loss = -std::min(unclipped, surrogate);
  term.grad_logp = term.clipped ? 0.0 : -advantage * term.ratio;
  return term;
}

KlTokenTerm kl_token(double logp, double ref_logp, KlEstimator estimator) {
  const double log_r = ref_logp - logp;
  switch (estimator) {
    case KlEstimator::kK1:
      return {-log_r, 1.0};
    case KlEstimator::kK2:
      return {0.5 * log_r * log_r, -log_r};
    case KlEstimator::kK3: {
      const double r = std::exp(log_r);
      return {r - 1.0 - log_r, 1.0 - r};
    }
  }
  MC_CHECK(false && "unknown KlEstimator");
  return {};
}

namespace {

Status check_size(std::span<const double> values, std::size_t expected, const char* name) {
  if (values.size() == expected) return Status();
  return invalid_argument(std::string("policy_loss: ") + name + " has " + std::to_string(values.size()) +
                         " entries, expected " + std::to_string(expected));
}

Status validate(const PolicyLossInputs& in, const PolicyLossOptions& options) {
  const std::size_t n = in.shape.size();
  if (!(options.clip.eps_low >= 0.0 && options.clip.eps_low < 1.0) || !(options.clip.eps_high >= 0.0)) {
    return invalid_argument("policy_loss: need 0 <= eps_low < 1 and eps_high >= 0");
  }
  if (!(options.kl.coef >= 0.0) || !std::isfinite(options.kl.coef)) {
    return invalid_argument("policy_loss: kl.coef must be finite and >= 0");
  }
  if (in.mask.size() != n) return invalid_argument("policy_loss: mask size does not match (B,T)");
  if (Status s = check_size(in.logp, n, "logp"); !s.ok()) return s;
  if (Status s = check_size(in.old_logp, n, "old_logp"); !s.ok()) return s;
  if (options.kl.coef > 0.0 || !in.ref_logp.empty()) {
    if (in.ref_logp.empty()) return invalid_argument("policy_loss: kl.coef > 0 needs ref_logp");
    if (Status s = check_size(in.ref_logp, n, "ref_logp"); !s.ok()) return s;
  }
  if (in.advantages.size() != in.shape.batch && in.advantages.size() != n) {
    return invalid_argument("policy_loss: advantages must have B or B*T entries, got " +
                           std::to_string(in.advantages.size()));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (in.mask[i] == 0) continue;
    const double adv = in.advantages.size() == n ? in.advantages[i] : in.advantages[i / in.shape.max_len];
    const bool finite = std::isfinite(in.logp[i]) && std::isfinite(in.old_logp[i]) && std::isfinite(adv) &&
                        (in.ref_logp.empty() || std::isfinite(in.ref_logp[i]));
    if (!finite) return invalid_argument("policy_loss: non-finite input at token " + std::to_string(i));
  }
  return Status();
}

}  // namespace

Result<PolicyLossResult> policy_loss(const PolicyLossInputs& in, const PolicyLossOptions& options) {
  if (Status s = validate(in, options); !s.ok()) return s;
  auto weights_or = aggregation_weights(in.mask, in.shape, options.aggregation);
  if (!weights_or.ok()) return weights_or.status();
  const std::vector<double>& weights = weights_or.value();

  const std::size_t n = in.shape.size();
  const bool with_kl = !in.ref_logp.empty();
  PolicyLossResult out;
  out.grad_logp.assign(n, 0.0);
  std::size_t valid = 0, clipped_low = 0, clipped_high = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (in.mask[i] == 0) continue;
    ++valid;
    const double adv = in.advantages.size() == n ? in.advantages[i] : in.advantages[i / in.shape.max_len];
    const PpoTokenTerm pg = ppo_clip_token(in.logp[i], in.old_logp[i], adv, options.clip);
    clipped_low += pg.clipped_low ? 1 : 0;
    clipped_high += pg.clipped_high ? 1 : 0;
    out.pg_loss += weights[i] * pg.loss;
    double grad = pg.grad_logp;
    if (with_kl) {
      const KlTokenTerm kl = kl_token(in.logp[i], in.ref_logp[i], options.kl.estimator);
      out.kl += weights[i] * kl.value;
      grad += options.kl.coef * kl.grad_logp;
    }
    out.grad_logp[i] = weights[i] * grad;
  }
  out.loss = out.pg_loss + options.kl.coef * out.kl;
  if (valid > 0) {
    const double denom = static_cast<double>(valid);
    out.clip_fraction_low = static_cast<double>(clipped_low) / denom;
    out.clip_fraction_high = static_cast<double>(clipped_high) / denom;
    out.clip_fraction = static_cast<double>(clipped_low + clipped_high) / denom;
  }
  return out;
}

}  // namespace musacoder::rl
