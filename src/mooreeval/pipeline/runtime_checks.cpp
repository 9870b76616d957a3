#include "mooreeval/pipeline/runtime_checks.h"

#include <algorithm>

#include "core/files.h"

namespace musacoder::eval {

using nlohmann::json;

std::vector<legality::Finding> consistency_findings(const json& labels,
                                                    const std::vector<verify::TrialOutputs>& reference_trials,
                                                    const std::vector<verify::TrialOutputs>& reference_checks,
                                                    const std::vector<verify::TrialOutputs>& candidate_checks,
                                                    const verify::Tolerance& tol) {
  std::vector<legality::Finding> out;
  if (!labels.is_array() || labels.size() != candidate_checks.size()) {
    out.push_back({"inconsistent_result",
                   "the candidate's consistency calls are incomplete (" +
                       std::to_string(candidate_checks.size()) + " outputs for " +
                       std::to_string(labels.is_array() ? labels.size() : 0) + " calls)",
                   0});
    return out;
  }
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const json& l = labels[i];
    const std::string name = l.is_object() ? l.value("name", "call") : "call";
    const bool from_trials = l.is_object() && l.value("ref", "") == "trial";
    const int index = l.is_object() ? l.value("index", -1) : -1;
    const auto& pool = from_trials ? reference_trials : reference_checks;
    if (index < 0 || static_cast<std::size_t>(index) >= pool.size()) {
      out.push_back({"inconsistent_result", name + ": no reference answer to compare with", 0});
      continue;
    }
    auto report =
        verify::compare_outputs({pool[static_cast<std::size_t>(index)]}, {candidate_checks[i]}, tol);
    if (report.passed != 1)
      out.push_back(
          {"inconsistent_result",
           name + ": " + report.first_failure +
               " (the trials passed, so the answer depends on call count, input addresses, caching, "
               "or a later call overwrote this output)",
           0});
  }
  return out;
}

namespace {

std::optional<json> read_json(const std::filesystem::path& path) {
  auto text = read_file(path, 1 << 20);
  if (!text.ok()) return std::nullopt;
  auto j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

}  // namespace

std::optional<double> read_timing_median(const std::filesystem::path& path) {
  auto j = read_json(path);
  if (!j || !j->contains("timing") || !(*j)["timing"].is_object()) return std::nullopt;
  const json& t = (*j)["timing"];
  if (!t.contains("median_ms") || !t["median_ms"].is_number()) return std::nullopt;
  return t["median_ms"].get<double>();
}

std::optional<double> paired_speedup(const std::vector<double>& reference_ms,
                                     const std::vector<double>& candidate_ms) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < std::min(reference_ms.size(), candidate_ms.size()); ++i)
    if (reference_ms[i] > 0 && candidate_ms[i] > 0) ratios.push_back(reference_ms[i] / candidate_ms[i]);
  if (ratios.empty()) return std::nullopt;
  std::sort(ratios.begin(), ratios.end());
  const std::size_t mid = ratios.size() / 2;
  return ratios.size() % 2 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
}

std::optional<double> read_recheck_mean(const std::filesystem::path& path) {
  auto j = read_json(path);
  if (!j || !j->contains("mean_ms") || !(*j)["mean_ms"].is_number()) return std::nullopt;
  return (*j)["mean_ms"].get<double>();
}

}  // namespace musacoder::eval
