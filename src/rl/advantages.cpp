#include "rl/advantages.h"

#include <cmath>
#include <string>

namespace musacoder::rl {
namespace {

double group_std(std::span<const double> group, double mean, StdKind kind) {
  const std::size_t n = group.size();
  const std::size_t dof = kind == StdKind::kSample ? n - 1 : n;
  if (dof == 0) return 0.0;
  double squares = 0.0;
  for (double r : group) squares += (r - mean) * (r - mean);
  return std::sqrt(squares / static_cast<double>(dof));
}

void fill_group(std::span<const double> group, const AdvantageOptions& options, std::span<double> out) {
  const std::size_t n = group.size();
  bool uniform = true;
  double sum = 0.0;
  for (double r : group) {
    sum += r;
    uniform = uniform && r == group[0];
  }
  if (uniform) {
    // Exact zeros rather than round-off residue: a uniform group carries no signal.
    for (double& a : out) a = 0.0;
    return;
  }
  const double mean = sum / static_cast<double>(n);
  switch (options.estimator) {
    case AdvantageEstimator::kGrpo: {
      const double denom = group_std(group, mean, options.std_kind) + options.epsilon;
      for (std::size_t i = 0; i < n; ++i) out[i] = (group[i] - mean) / denom;
      return;
    }
    case AdvantageEstimator::kDrGrpo:
      for (std::size_t i = 0; i < n; ++i) out[i] = group[i] - mean;
      return;
    case AdvantageEstimator::kRloo:
      for (std::size_t i = 0; i < n; ++i) out[i] = group[i] - (sum - group[i]) / static_cast<double>(n - 1);
      return;
  }
  MC_CHECK(false && "unknown AdvantageEstimator");
}

}  // namespace

Result<std::vector<double>> group_advantages(std::span<const double> rewards, std::size_t group_size,
                                             const AdvantageOptions& options) {
  if (group_size == 0) return invalid_argument("group_advantages: group_size must be > 0");
  if (rewards.size() % group_size != 0) {
    return invalid_argument("group_advantages: " + std::to_string(rewards.size()) +
                           " rewards is not a multiple of group_size " + std::to_string(group_size));
  }
  if (!std::isfinite(options.epsilon) || options.epsilon < 0.0) {
    return invalid_argument("group_advantages: epsilon must be finite and >= 0");
  }
  if (options.estimator == AdvantageEstimator::kRloo && group_size < 2) {
    return invalid_argument("group_advantages: RLOO needs group_size >= 2");
  }
  for (std::size_t i = 0; i < rewards.size(); ++i) {
    if (!std::isfinite(rewards[i])) {
      return invalid_argument("group_advantages: reward " + std::to_string(i) + " is not finite");
    }
  }
  std::vector<double> advantages(rewards.size());
  for (std::size_t start = 0; start < rewards.size(); start += group_size) {
    fill_group(rewards.subspan(start, group_size), options,
               std::span<double>(advantages).subspan(start, group_size));
  }
  return advantages;
}

}  // namespace musacoder::rl
