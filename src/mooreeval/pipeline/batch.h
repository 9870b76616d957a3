// Evaluating many (task, sample) pairs with a pool of worker threads, one Evaluator.
// A crash or timeout of one candidate stays inside its own runner processes, so it
// cannot change the verdict of another.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "mooreeval/pipeline/evaluator.h"
#include "mooreeval/task/task.h"

namespace musacoder::eval {

struct BatchJob {
  task::TaskSpec task;
  std::filesystem::path sample;  // submission file (Python or a raw response)
  std::string label;             // shown in tables, e.g. "elementwise/add#0"
};

// Samples for a suite: for each task id T, `samples_dir/T.py` (one sample) and/or every
// .py/.md/.txt file in `samples_dir/T/` (k samples), sorted. Tasks without samples are
// skipped; no sample at all is an error.
Result<std::vector<BatchJob>> discover_samples(const std::vector<task::TaskSpec>& tasks,
                                               const std::filesystem::path& samples_dir);

// Runs every job; `on_done(index, verdict)` is called (serialised) as each finishes.
// Returns verdicts in job order. A sample file that cannot be read gets a format_error
// verdict naming the problem.
std::vector<Verdict> run_batch(Evaluator& evaluator, const std::vector<BatchJob>& jobs, int workers,
                               const std::function<void(std::size_t, const Verdict&)>& on_done = {});

}  // namespace musacoder::eval
