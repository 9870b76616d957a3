// The orchestrator's half of the run-time legality checks (docs/legality.md): the
// candidate's consistency calls compared with the reference's answers, and the files the
// runners publish their timings in.
//
// Thread-safety: pure functions over their arguments (the readers only read files).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "mooreeval/legality/legality.h"
#include "mooreeval/verify/compare.h"
#include "mooreeval/verify/output_file.h"

namespace musacoder::eval {

// `labels`: the candidate's [{"name", "ref": "trial"|"check", "index"}], one per entry of
// `candidate_checks` (same order). Each entry must match reference_trials[index] or
// reference_checks[index] under `tol`; every mismatch (or missing/extra entry) is an
// `inconsistent_result` finding: the answer depends on call count, input addresses,
// caching or later calls overwriting earlier outputs.
std::vector<legality::Finding> consistency_findings(const nlohmann::json& labels,
                                                    const std::vector<verify::TrialOutputs>& reference_trials,
                                                    const std::vector<verify::TrialOutputs>& reference_checks,
                                                    const std::vector<verify::TrialOutputs>& candidate_checks,
                                                    const verify::Tolerance& tol);

// The runner's {"timing": {"median_ms": ...}} file: the median, if the file is valid.
std::optional<double> read_timing_median(const std::filesystem::path& path);

// The speedup of paired benchmark rounds: the median over rounds of reference / candidate (rounds where
// either side is missing or not positive left out). nullopt when no round pairs up.
std::optional<double> paired_speedup(const std::vector<double>& reference_ms,
                                     const std::vector<double>& candidate_ms);

// The runner's re-measurement file {"mean_ms": ..., "method": ...}: the mean, if valid.
std::optional<double> read_recheck_mean(const std::filesystem::path& path);

}  // namespace musacoder::eval
