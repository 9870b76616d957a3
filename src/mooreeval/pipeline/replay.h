// Re-running a recorded evaluation: a verdict's config (docs/verdict.schema.json) holds the settings
// that decide its numbers (tolerances, iterations, cpu_threads, poison bytes, build path) and the
// seeds it drew (init, trials, consistency checks, re-check). Applying them to EvalOptions makes the
// next evaluation of the same task and candidate draw exactly those inputs again.
#pragma once

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "mooreeval/pipeline/evaluator.h"

namespace musacoder::eval {

// Reads config.seeds of a verdict. kInvalidArgument when a seed is missing or not an unsigned integer.
Result<EvalSeeds> seeds_of_verdict(const nlohmann::json& verdict);

// `options` with the recorded settings and seeds of `verdict` applied; the fields a verdict does
// not record (deadlines, workers, cache, sandbox) stay as given. kInvalidArgument for a verdict
// without config or seeds (verdicts written before seeds were recorded, or a reject_submission).
Result<EvalOptions> options_for_replay(const nlohmann::json& verdict, EvalOptions options);

}  // namespace musacoder::eval
