// The live progress line of a run:
//   "eval-model  312/800 samples (39%)  tasks 38/100  pass@1 0.412  pass@8 0.630  infra 2  elapsed 6m10s  ETA 9m38s"
// ETA extrapolates the rate of samples finished in this process (resumed samples do not count toward the rate).
// Pure function.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace musacoder::kernelbench {

struct ProgressCounts {
  std::size_t samples_done = 0, samples_total = 0;  // finished chains (all, including resumed ones)
  std::size_t done_here = 0, todo_here = 0;          // finished / to do in this process
  std::size_t tasks_done = 0, tasks_total = 0;       // tasks with every sample finished
  double elapsed_seconds = 0;
};

// `overall` is aggregate()'s views.best.overall (may be null); k the pass@k k.
std::string progress_line(const ProgressCounts& c, const nlohmann::json& overall, int k);

// "9m38s", "1h02m", "12s".
std::string format_duration(double seconds);

}  // namespace musacoder::kernelbench
