#include "mooreeval/verify/compare.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/check.h"

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

// What one tensor's element loop found; the maxima start from the report's so far.
struct Tally {
  std::size_t bad = 0, first_bad = 0, nonfinite = 0;
  double max_abs_error = 0.0, max_rel_error = 0.0;
};

// The element loop. ref_at(i) and cand_at(i) return element i widened to double; both are
// inlined, so each storage type gets its own loop with no per-element dispatch.
template <typename RefAt, typename CandAt>
void compare_elements(std::size_t n, RefAt ref_at, CandAt cand_at, bool exact, const Tolerance& tol,
                      Tally& t) {
  const double atol = tol.atol, rtol = tol.rtol;
  double max_abs = t.max_abs_error, max_rel = t.max_rel_error;
  for (std::size_t i = 0; i < n; ++i) {
    const double rv = ref_at(i), cv = cand_at(i);
    bool ok;
    if (!std::isfinite(rv) || !std::isfinite(cv)) [[unlikely]] {
      ok = (std::isnan(rv) && std::isnan(cv)) || rv == cv;
      if (!ok && !std::isfinite(cv)) ++t.nonfinite;
    } else {
      const double abs_err = std::fabs(cv - rv);
      max_abs = std::max(max_abs, abs_err);
      max_rel = std::max(max_rel, abs_err / std::max(std::fabs(rv), 1e-12));
      ok = exact ? cv == rv : abs_err <= atol + rtol * std::fabs(rv);
    }
    if (!ok && t.bad++ == 0) t.first_bad = i;
  }
  t.max_abs_error = max_abs;
  t.max_rel_error = max_rel;
}

// Returns "" when the tensor passes, else why not; updates the error maxima.
std::string compare_tensor(const TensorData& r, const TensorData& c, const Tolerance& tol,
                           NumericReport& rep) {
  if (r.shape() != c.shape()) return "shape " + shape_str(c.shape()) + ", expected " + shape_str(r.shape());
  if (r.dtype() != c.dtype()) return "dtype " + c.dtype() + ", expected " + r.dtype();
  MC_CHECK(r.numel() == c.numel());  // both are the product of the shape
  const bool exact = is_exact_dtype(r.dtype());
  Tally t{.max_abs_error = rep.max_abs_error, .max_rel_error = rep.max_rel_error};
  if (r.storage() == c.storage()) {
    visit_storage(r.storage(), [&](auto v) {
      using T = decltype(v);
      const std::byte* rp = r.data();
      const std::byte* cp = c.data();
      compare_elements(
          r.numel(), [rp](std::size_t i) { return widen(load<T>(rp, i)); },
          [cp](std::size_t i) { return widen(load<T>(cp, i)); }, exact, tol, t);
    });
  } else {  // equal dtypes in different storage: only a hand-made file; slower, same result
    compare_elements(
        r.numel(), [&r](std::size_t i) { return r.value(i); }, [&c](std::size_t i) { return c.value(i); },
        exact, tol, t);
  }
  rep.max_abs_error = t.max_abs_error;
  rep.max_rel_error = t.max_rel_error;
  if (t.bad == 0) return "";
  std::ostringstream why;
  why << t.bad << " of " << r.numel() << " elements mismatch";
  if (t.nonfinite) why << " (" << t.nonfinite << " NaN/Inf)";
  why << "; first at flat index " << t.first_bad << ": got " << c.value(t.first_bad) << ", expected "
      << r.value(t.first_bad);
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
