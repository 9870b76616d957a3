// The front door's grouped options (mooreeval.h) onto the pipeline's flat EvalOptions, which the
// CLI binds flag by flag. Internal to src/mooreeval.
#pragma once

#include "core/status.h"
#include "mooreeval/mooreeval.h"
#include "mooreeval/pipeline/evaluator.h"

namespace musacoder::mooreeval {

// kInvalidArgument for an unknown backend or build path, or a runner dir that cannot be found.
// Every field is carried over; Options{} maps to EvalOptions{} (a unit test pins it).
Result<eval::EvalOptions> to_eval_options(const Options& options);

}  // namespace musacoder::mooreeval
