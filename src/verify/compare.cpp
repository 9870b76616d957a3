#include "verify/compare.h"

#include <cmath>
#include <sstream>

namespace musacoder::verify {
namespace {

bool is_exact_dtype(const std::string& dtype) {
  return dtype == "bool" || dtype.starts_with("int") || dtype.starts_with("uint");
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// Returns "" when the tensor passes, else why not; updates the error maxima.
std::string compare_tensor(const TensorData& r, const TensorData& c, const Tolerance& tol,
                           NumericReport& rep) {
  if (r.shape != c.shape) return "shape " + shape_str(c.shape) + ", expected " + shape_str(r.shape);
  if (r.dtype != c.dtype) return "dtype " + c.dtype + ", expected " + r.dtype;
  const bool exact = is_exact_dtype(r.dtype);
  std::size_t bad = 0, first_bad = 0, nonfinite = 0;
  for (std::size_t i = 0; i < r.values.size(); ++i) {
    const double rv = r.values[i], cv = c.values[i];
    bool ok;
    if (!std::isfinite(rv) || !std::isfinite(cv)) {
      ok = (std::isnan(rv) && std::isnan(cv)) || rv == cv;
      if (!ok && !std::isfinite(cv)) ++nonfinite;
    } else {
      const double abs_err = std::fabs(cv - rv);
      rep.max_abs_error = std::max(rep.max_abs_error, abs_err);
      rep.max_rel_error = std::max(rep.max_rel_error, abs_err / std::max(std::fabs(rv), 1e-12));
      ok = exact ? cv == rv : abs_err <= tol.atol + tol.rtol * std::fabs(rv);
    }
    if (!ok && bad++ == 0) first_bad = i;
  }
  if (bad == 0) return "";
  std::ostringstream why;
  why << bad << " of " << r.values.size() << " elements mismatch";
  if (nonfinite) why << " (" << nonfinite << " NaN/Inf)";
  why << "; first at flat index " << first_bad << ": got " << c.values[first_bad] << ", expected "
      << r.values[first_bad];
  return why.str();
}

}  // namespace

NumericReport compare_outputs(const std::vector<TrialOutputs>& reference,
                              const std::vector<TrialOutputs>& candidate, const Tolerance& tol) {
  NumericReport rep;
  rep.trials = static_cast<int>(reference.size());
  for (std::size_t t = 0; t < reference.size(); ++t) {
    std::string why;
    if (t >= candidate.size()) {
      why = "no output for this trial";
    } else if (candidate[t].size() != reference[t].size()) {
      why = "returned " + std::to_string(candidate[t].size()) + " tensors, expected " +
            std::to_string(reference[t].size());
    } else {
      for (std::size_t k = 0; k < reference[t].size() && why.empty(); ++k) {
        why = compare_tensor(reference[t][k], candidate[t][k], tol, rep);
        if (!why.empty() && reference[t].size() > 1) why = "output " + std::to_string(k) + ": " + why;
      }
    }
    if (why.empty()) {
      ++rep.passed;
    } else if (rep.first_failure.empty()) {
      rep.first_failure = "trial " + std::to_string(t) + ": " + why;
    }
  }
  return rep;
}

}  // namespace musacoder::verify
