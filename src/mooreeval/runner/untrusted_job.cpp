#include "mooreeval/runner/untrusted_job.h"

namespace musacoder::eval {

namespace fs = std::filesystem;

Permit Permit::take(std::counting_semaphore<>& slots) {
  slots.acquire();
  return Permit(&slots);
}

std::optional<Permit> Permit::try_take(std::counting_semaphore<>& slots) {
  if (!slots.try_acquire()) return std::nullopt;
  return Permit(&slots);
}

Result<fs::path> UntrustedJob::provide(const fs::path& file, const std::string& name) const {
  if (!lease) return file;
  return lease->stage(file, name);
}

Result<UntrustedJob> untrusted_job(SandboxedWarmPool* pool, const run::RunnerOptions& cold_runner,
                                   const fs::path& cold_dir, ProcessWrapper cold_wrapper,
                                   const fs::path& candidate_path, const fs::path& task_path) {
  UntrustedJob job;
  if (pool)
    if (auto lease = pool->acquire()) job.lease.emplace(std::move(*lease));
  if (!job.lease) {
    job.runner = cold_runner;
    job.dir = cold_dir;
    job.wrapper = std::move(cold_wrapper);
    job.candidate_path = candidate_path;
    job.task_path = task_path;
    return job;
  }
  job.runner = job.lease->runner_options();
  job.dir = job.lease->job_dir();
  auto cand = job.lease->stage(candidate_path, "candidate.py");
  if (!cand.ok()) return cand.status();
  auto task = job.lease->stage(task_path, "task.py");
  if (!task.ok()) return task.status();
  job.candidate_path = *cand;
  job.task_path = *task;
  return job;
}

}  // namespace musacoder::eval
