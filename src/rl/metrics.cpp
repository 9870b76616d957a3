#include "rl/metrics.h"

#include <cmath>
#include <string>

namespace musacoder::rl {
namespace {

Status check_speedups(std::span<const SampleOutcome> samples, const char* where) {
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const SampleOutcome& s = samples[i];
    if (s.correct && !(std::isfinite(s.speedup) && s.speedup > 0.0)) {
      return invalid_argument(std::string(where) + ": correct sample " + std::to_string(i) +
                             " has a non-positive or non-finite speedup");
    }
  }
  return Status();
}

std::size_t count_correct(std::span<const SampleOutcome> samples) {
  std::size_t c = 0;
  for (const SampleOutcome& s : samples) c += s.correct ? 1 : 0;
  return c;
}

}  // namespace

Result<double> pass_at_k(std::size_t n, std::size_t c, std::size_t k) {
  if (k == 0 || k > n || c > n) {
    return invalid_argument("pass_at_k: need 1 <= k <= n and c <= n (n=" + std::to_string(n) +
                           ", c=" + std::to_string(c) + ", k=" + std::to_string(k) + ")");
  }
  if (n - c < k) return 1.0;
  // C(n−c,k)/C(n,k) = Π_{i=n−c+1}^{n} (1 − k/i): no large binomials, no cancellation.
  double fail_all = 1.0;
  for (std::size_t i = n - c + 1; i <= n; ++i)
    fail_all *= 1.0 - static_cast<double>(k) / static_cast<double>(i);
  return 1.0 - fail_all;
}

Result<double> avg_at_k(std::span<const SampleOutcome> samples) {
  if (samples.empty()) return invalid_argument("avg_at_k: no samples");
  return static_cast<double>(count_correct(samples)) / static_cast<double>(samples.size());
}

Result<double> fast_p(std::span<const SampleOutcome> samples, double p) {
  if (samples.empty()) return invalid_argument("fast_p: no samples");
  if (std::isnan(p)) return invalid_argument("fast_p: p is NaN");
  if (Status s = check_speedups(samples, "fast_p"); !s.ok()) return s;
  std::size_t fast = 0;
  for (const SampleOutcome& s : samples) fast += s.correct && s.speedup > p ? 1 : 0;
  return static_cast<double>(fast) / static_cast<double>(samples.size());
}

Result<double> geomean_speedup(std::span<const SampleOutcome> samples) {
  if (Status s = check_speedups(samples, "geomean_speedup"); !s.ok()) return s;
  double log_sum = 0.0;
  std::size_t correct = 0;
  for (const SampleOutcome& s : samples) {
    if (!s.correct) continue;
    log_sum += std::log(s.speedup);
    ++correct;
  }
  if (correct == 0) return invalid_argument("geomean_speedup: no correct sample");
  return std::exp(log_sum / static_cast<double>(correct));
}

Result<double> faster_than_reference_share(std::span<const SampleOutcome> samples) {
  return fast_p(samples, 1.0);
}

Result<EvalSummary> summarize(std::span<const std::vector<SampleOutcome>> problems,
                              const SummaryOptions& options) {
  if (problems.empty()) return invalid_argument("summarize: no problems");
  if (options.k == 0) return invalid_argument("summarize: k must be >= 1");
  EvalSummary out;
  out.problems = problems.size();
  std::vector<SampleOutcome> all_correct;
  for (std::size_t j = 0; j < problems.size(); ++j) {
    const std::vector<SampleOutcome>& samples = problems[j];
    if (samples.size() < options.k) {
      return invalid_argument("summarize: problem " + std::to_string(j) + " has " +
                             std::to_string(samples.size()) + " samples, k is " + std::to_string(options.k));
    }
    auto pass = pass_at_k(samples.size(), count_correct(samples), options.k);
    auto avg = avg_at_k(samples);
    auto fast = fast_p(samples, options.p);
    auto faster = faster_than_reference_share(samples);
    for (const Status& s : {pass.status(), avg.status(), fast.status(), faster.status()}) {
      if (!s.ok()) return s;
    }
    out.pass_at_k += pass.value();
    out.avg_at_k += avg.value();
    out.fast_p += fast.value();
    out.faster_share += faster.value();
    for (const SampleOutcome& s : samples) {
      if (s.correct) all_correct.push_back(s);
    }
  }
  const double count = static_cast<double>(problems.size());
  out.pass_at_k /= count;
  out.avg_at_k /= count;
  out.fast_p /= count;
  out.faster_share /= count;
  if (!all_correct.empty()) out.geomean_speedup = geomean_speedup(all_correct).value();
  return out;
}

}  // namespace musacoder::rl
