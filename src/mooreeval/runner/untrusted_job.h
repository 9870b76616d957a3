// Where a runner job that executes candidate code (inspection, the candidate's run) takes
// place, and the counted permits that bound such jobs and the device's run slots.
#pragma once

#include <filesystem>
#include <optional>
#include <semaphore>

#include "core/status.h"
#include "process/subprocess.h"
#include "mooreeval/runner/sandboxed_warm_pool.h"
#include "mooreeval/runner/runner.h"

namespace musacoder::eval {

// One permit of a counting semaphore (a build slot, a run slot, a candidate runner),
// held until destroyed. Move-only.
class Permit {
 public:
  static Permit take(std::counting_semaphore<>& slots);                     // waits for one
  static std::optional<Permit> try_take(std::counting_semaphore<>& slots);  // none free: nullopt
  Permit(Permit&& o) noexcept : slots_(o.slots_) { o.slots_ = nullptr; }
  Permit& operator=(Permit&&) = delete;
  Permit(const Permit&) = delete;
  ~Permit() {
    if (slots_) slots_->release();
  }

 private:
  explicit Permit(std::counting_semaphore<>* slots) : slots_(slots) {}
  std::counting_semaphore<>* slots_;
};

// One untrusted runner job's place: forked by a sandboxed warm runner that holds `lease`
// (its inputs copied in), or cold in a sandbox of its own (or none, with the sandbox off).
struct UntrustedJob {
  std::optional<SandboxedWarmPool::Lease> lease;
  run::RunnerOptions runner;
  std::filesystem::path dir;                        // its work dir: job, result, phase and output files
  ProcessWrapper wrapper;                           // cold: the job's sandbox; warm: none (already inside)
  std::filesystem::path candidate_path, task_path;  // as the job sees them

  // `file` where the job can read it: copied into the member's in/ as `name` (read-only to
  // the job) with a lease, else the file itself (a cold job's sandbox binds it).
  Result<std::filesystem::path> provide(const std::filesystem::path& file, const std::string& name) const;
};

// The job in a warm member when `pool` has one, staging candidate.py and the task file;
// else cold: `cold_runner` in `cold_dir` under `cold_wrapper`, the files where they are.
Result<UntrustedJob> untrusted_job(SandboxedWarmPool* pool, const run::RunnerOptions& cold_runner,
                                   const std::filesystem::path& cold_dir, ProcessWrapper cold_wrapper,
                                   const std::filesystem::path& candidate_path,
                                   const std::filesystem::path& task_path);

}  // namespace musacoder::eval
