// The numeric check: candidate outputs against reference outputs, trial by trial.
// An element passes when |c - r| <= atol + rtol * |r| (torch.allclose); NaN or Inf in the
// candidate passes only where the reference has the same non-finite value. Integer and
// bool outputs must match exactly. Shapes and dtypes must be equal. All arithmetic is in double,
// on elements widened from their storage one at a time (nothing is copied); no shared state.
#pragma once

#include <string>
#include <vector>

#include "mooreeval/verify/output_file.h"

namespace musacoder::verify {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-3;
};

struct NumericReport {
  int trials = 0;
  int passed = 0;
  double max_abs_error = 0.0;  // over comparable elements of all trials
  double max_rel_error = 0.0;  // |c - r| / max(|r|, tiny)
  std::string first_failure;   // human-readable reason of the first failing trial
  double pass_fraction() const { return trials ? static_cast<double>(passed) / trials : 0.0; }
};

NumericReport compare_outputs(const std::vector<TrialOutputs>& reference,
                              const std::vector<TrialOutputs>& candidate, const Tolerance& tol);

}  // namespace musacoder::verify
