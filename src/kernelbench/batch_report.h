// Batch reports: the KernelBench metrics over a batch's verdicts (Pass@k with the
// unbiased estimator, Avg@k, fast_p, geometric-mean speedup) and a verdict table.
// infra_error verdicts are left out of every metric and counted separately.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mooreeval/mooreeval.h"

namespace musacoder::kernelbench {

struct LabelledVerdict {
  std::string label;  // e.g. "elementwise/add#0"
  const mooreeval::Verdict* verdict;
};

// {"samples", "problems", "verdicts": {class: n}, "infra_errors", "pass_at_k": {"1": x, ...},
//  "avg_at_k", "fast_p": {"0": x, "0.8": ..., "2": ...}, "geomean_speedup", "mean_reward"}
nlohmann::json summarize_batch(const std::vector<mooreeval::Verdict>& verdicts);

// A path as JSON-safe text: UTF-8 as it is, every byte that is not part of valid UTF-8
// written as "\xNN" (file names on Linux are bytes; JSON strings must be UTF-8).
std::string path_text(const std::filesystem::path& path);

// Serialises JSON that may carry text from outside (messages, names): invalid UTF-8 is
// replaced (U+FFFD) rather than thrown on.
std::string safe_dump(const nlohmann::json& j, int indent = -1);

// A fixed-width text table, one row per verdict, then a totals line.
std::string verdict_table(const std::vector<LabelledVerdict>& rows);

}  // namespace musacoder::kernelbench
