// The run's numbers, recomputed from its sample records (samples.jsonl) and its suite.
//
// A sample is a chain of turns (1 turn unless --turns N). Views:
//   "turn<t>"  each chain's state after turn t: its t-th turn, or its last turn when it ended earlier
//              (it passed, or failed for infrastructure);
//   "best"     best of turns: correct if any turn was, with the largest speedup of its correct turns.
// For each view, per level ("level<L>") and "overall": per task with n scored samples and c correct,
//   pass@1 = c/n, pass@k (unbiased, k = --samples; tasks with n < k are left out and counted in
//   tasks_short_of_k), avg@k = c/n, fast_p = share of the n that are correct with speedup > p
//   (p in kFastP); then the mean over tasks with a 95% normal interval over tasks
//   (mean ± 1.96·sd/√m, clipped to [0, 1]; m = 1 gives a point). geomean_speedup is over every correct
//   sample with a measured speedup. verdicts counts the chosen turn's class.
// Samples whose chosen turn is an infrastructure failure are counted in "infra" and left out of n;
// samples not yet run are counted in "missing". Unloadable tasks are listed in the suite block and left out.
//
// Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernelbench/records.h"
#include "kernelbench/suite.h"

namespace musacoder::kernelbench {

inline constexpr double kFastP[] = {0.0, 0.8, 1.0, 1.1, 1.5, 2.0};
inline constexpr const char* kSummarySchema = "musacoder.eval-summary/1";

struct AggregateOptions {
  int samples = 8;  // k of pass@k, and the samples per task expected
  int turns = 1;
};

// {"schema", "k", "turns", "suite": {"id","content_hash","tasks","usable","unloadable":[{"id","error"}]},
//  "views": {"turn1": {"overall": G, "level1": G, ...}, ..., "best": {...}},
//  "infra": {"generation": n, "verifier": n}, "time": {"turns": n, "generate_seconds": T, "verify_seconds":
//  T} (T = {"sum","median","max"} over every turn record: submission to last token, and verification),
//  "tasks": [{"id","level","samples":[{"sample","verdict", "speedup","turns"}]}]}, with G =
//  {"tasks","samples","infra","missing","tasks_short_of_k", "pass_at_1","pass_at_k","avg_at_k":
//  {"mean","low","high"}, "fast_p": {"1.1": {...}, ...}, "geomean_speedup": x|null, "verdicts": {class: n},
//  "speedups": [x, ...]}.
nlohmann::json aggregate(const Suite& suite, const Chains& chains, const AggregateOptions& options);

// "0", "0.8", "1", "1.1", "1.5", "2": the key of a fast_p threshold.
std::string fast_p_key(double p);

}  // namespace musacoder::kernelbench
