#include "rl/mirror_pop.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "rl/random_draws.h"

namespace musacoder::rl {
namespace {

bool in_unit_interval(double x) {
  return x >= 0.0 && x <= 1.0;
}

// Most learned samples (re-checks included) a batch with `unlearned` other samples may keep so that
// learned / kept ≤ share. The epsilon absorbs round-off when share·U/(1 − share) is an integer.
std::size_t learned_allowance(std::size_t unlearned, std::size_t learned, double share) {
  if (share >= 1.0) return learned;
  const double allowance = share / (1.0 - share) * static_cast<double>(unlearned);
  return static_cast<std::size_t>(std::floor(allowance + 1e-9));
}

double ratio(std::size_t num, std::size_t den) {
  return den == 0 ? 0.0 : static_cast<double>(num) / static_cast<double>(den);
}

}  // namespace

double MirrorPopCounters::samples_saved() const {
  return ratio(skipped, samples_seen);
}
double MirrorPopCounters::compute_saved() const {
  return ratio(tokens_skipped, tokens_seen);
}

Result<MirrorPop> MirrorPop::create(const MirrorPopOptions& options) {
  if (!(options.tau >= 0.0) || !std::isfinite(options.tau)) {
    return invalid_argument("MirrorPop: tau must be finite and >= 0");
  }
  if (!in_unit_interval(options.learned_pass_rate) || !in_unit_interval(options.max_learned_share) ||
      !in_unit_interval(options.p_recheck)) {
    return invalid_argument(
        "MirrorPop: learned_pass_rate, max_learned_share and p_recheck must lie in [0, 1]");
  }
  return MirrorPop(options);
}

bool MirrorPop::is_learned(const SampleSignal& s) const {
  return s.divergence < options_.tau && s.group_pass_rate >= options_.learned_pass_rate;
}

Result<MirrorPopBatch> MirrorPop::filter(std::span<const SampleSignal> batch) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!std::isfinite(batch[i].divergence) || !in_unit_interval(batch[i].group_pass_rate)) {
      return invalid_argument("MirrorPop::filter: sample " + std::to_string(i) +
                             " needs a finite divergence and a pass rate in [0, 1]");
    }
  }
  std::mt19937_64 rng(detail::mix_seed(options_.seed, counters_.batches));
  MirrorPopBatch out;
  out.decisions.assign(batch.size(), SampleDecision::kKeep);
  std::vector<std::size_t> candidates;  // learned, not re-checked: may be dropped
  std::size_t unlearned = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (!is_learned(batch[i])) {
      ++unlearned;
      continue;
    }
    ++out.learned;
    if (detail::uniform01(rng) < options_.p_recheck) {
      out.decisions[i] = SampleDecision::kRecheck;
      ++out.rechecked;
    } else {
      candidates.push_back(i);
    }
  }
  const std::size_t allowed = learned_allowance(unlearned, out.learned, options_.max_learned_share);
  const std::size_t keep_n =
      allowed > out.rechecked ? std::min(allowed - out.rechecked, candidates.size()) : 0;
  detail::choose_front(candidates, keep_n, rng);
  for (std::size_t j = 0; j < candidates.size(); ++j) {
    out.decisions[candidates[j]] = j < keep_n ? SampleDecision::kKeepLearned : SampleDecision::kSkip;
  }
  if (!candidates.empty()) p_skip_ = 1.0 - ratio(keep_n, candidates.size());
  out.p_skip = p_skip_;
  out.skipped = candidates.size() - keep_n;
  out.kept = batch.size() - out.skipped;
  out.keep.resize(batch.size());
  std::size_t tokens_skipped = 0, tokens = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const bool skip = out.decisions[i] == SampleDecision::kSkip;
    out.keep[i] = skip ? 0 : 1;
    tokens += batch[i].tokens;
    tokens_skipped += skip ? batch[i].tokens : 0;
  }
  const std::size_t kept_learned = out.learned - out.skipped;
  out.learned_share_seen = ratio(out.learned, batch.size());
  out.learned_share_kept = ratio(kept_learned, out.kept);
  out.ceiling_met = out.rechecked <= allowed;

  ++counters_.batches;
  counters_.samples_seen += batch.size();
  counters_.learned += out.learned;
  counters_.skipped += out.skipped;
  counters_.rechecked += out.rechecked;
  counters_.kept_learned += kept_learned;
  counters_.ceiling_missed += out.ceiling_met ? 0 : 1;
  counters_.tokens_seen += tokens;
  counters_.tokens_skipped += tokens_skipped;
  return out;
}

namespace {

Status check_token_inputs(std::span<const double> values, std::span<const std::uint8_t> mask,
                          TokenBatchShape shape, const char* where) {
  if (values.size() != shape.size() || mask.size() != shape.size()) {
    return invalid_argument(std::string(where) + ": inputs must have B*T = " + std::to_string(shape.size()) +
                           " entries");
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (mask[i] != 0 && !std::isfinite(values[i])) {
      return invalid_argument(std::string(where) + ": non-finite value at token " + std::to_string(i));
    }
  }
  return Status();
}

}  // namespace

Result<std::vector<double>> sequence_divergence(std::span<const double> logp,
                                                std::span<const double> mirror_logp,
                                                std::span<const std::uint8_t> mask, TokenBatchShape shape,
                                                KlEstimator estimator) {
  if (Status s = check_token_inputs(logp, mask, shape, "sequence_divergence"); !s.ok()) return s;
  if (Status s = check_token_inputs(mirror_logp, mask, shape, "sequence_divergence"); !s.ok()) return s;
  std::vector<double> out(shape.batch, 0.0);
  const std::size_t T = shape.max_len;
  for (std::size_t b = 0; b < shape.batch; ++b) {
    double sum = 0.0;
    std::size_t count = 0;
    for (std::size_t t = 0; t < T; ++t) {
      const std::size_t i = b * T + t;
      if (mask[i] == 0) continue;
      sum += kl_token(logp[i], mirror_logp[i], estimator).value;
      ++count;
    }
    out[b] = count == 0 ? 0.0 : sum / static_cast<double>(count);
  }
  return out;
}

Result<std::vector<std::uint8_t>> paper_sequence_mask(std::span<const double> log_ratio,
                                                      std::span<const std::uint8_t> mask,
                                                      TokenBatchShape shape, double delta) {
  if (!(delta >= 0.0)) return invalid_argument("paper_sequence_mask: delta must be >= 0");
  if (Status s = check_token_inputs(log_ratio, mask, shape, "paper_sequence_mask"); !s.ok()) return s;
  std::vector<std::uint8_t> keep(shape.batch, 0);
  const std::size_t T = shape.max_len;
  for (std::size_t b = 0; b < shape.batch; ++b) {
    double sum = 0.0;
    std::size_t count = 0;
    for (std::size_t t = 0; t < T; ++t) {
      const std::size_t i = b * T + t;
      if (mask[i] == 0) continue;
      sum += std::abs(log_ratio[i]);
      ++count;
    }
    keep[b] = count > 0 && sum / static_cast<double>(count) <= delta ? 1 : 0;
  }
  return keep;
}

}  // namespace musacoder::rl
