#pragma once
// Evaluation metrics of KernelBench-style runs (DESIGN §7). A problem is sampled n times; every sample
// is either correct (numerically matches the reference) or not, and a correct one has a speedup
// (reference time / candidate time).
//
//   pass@k   1 − C(n−c, k)/C(n, k), the unbiased estimator (Chen et al. 2021), computed as the stable
//            product 1 − Π_{i=n−c+1}^{n} (1 − k/i); 1 when n − c < k.  n=10,c=3,k=1 → 0.3; n=5,c=2,k=3 → 0.9
//   avg@k    mean correctness of the k samples, c/k (with n > k samples: c/n, its unbiased estimate)
//   fast_p   share of samples that are correct AND have speedup > p (KernelBench; fast_0 = correctness,
//            fast_1 = correct and faster than the reference)
//   geomean  exp(mean log speedup) over the correct samples
//   faster   share of all samples that are correct and faster than the reference (= fast_1)
// summarize() averages the per-problem values over problems (each problem weighs the same).
//
// Thread-safety: pure functions.

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "core/check.h"
#include "core/status.h"

namespace musacoder::kernelbench {

struct SampleOutcome {
  bool correct = false;
  double speedup = 0.0;  // reference time / candidate time; only read when correct (then finite, > 0)
};

// Errors (invalid): k == 0, k > n or c > n.
Result<double> pass_at_k(std::size_t n, std::size_t c, std::size_t k);

// Share of correct samples. Errors (invalid): no samples.
Result<double> avg_at_k(std::span<const SampleOutcome> samples);

// Errors (invalid): no samples; a correct sample with a non-finite or non-positive speedup; p NaN.
Result<double> fast_p(std::span<const SampleOutcome> samples, double p);

// Errors (invalid): no correct sample; a correct sample with a non-finite or non-positive speedup.
Result<double> geomean_speedup(std::span<const SampleOutcome> samples);

// fast_p(samples, 1.0).
Result<double> faster_than_reference_share(std::span<const SampleOutcome> samples);

struct SummaryOptions {
  // k of pass@k; every problem needs at least k samples. ≥ 1.
  std::size_t k = 1;
  // Speedup threshold of fast_p.
  double p = 1.0;
};

struct EvalSummary {
  std::size_t problems = 0;
  double pass_at_k = 0.0;                 // mean over problems
  double avg_at_k = 0.0;                  // mean over problems of each problem's correct share
  double fast_p = 0.0;                    // mean over problems
  double faster_share = 0.0;              // mean over problems of fast_1
  std::optional<double> geomean_speedup;  // over all correct samples of all problems; none if no correct one
};

// problems[j] holds the samples of problem j. Errors (invalid): no problems; a problem with fewer than k
// samples; the per-sample errors above.
Result<EvalSummary> summarize(std::span<const std::vector<SampleOutcome>> problems,
                              const SummaryOptions& options = {});

}  // namespace musacoder::kernelbench
