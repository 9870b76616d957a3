// The temporary directory of one process run, and the sweep of runs that died.
//
// Every temp dir of a run (job dirs, warm runners, probes) lives under one run dir,
// `<parent>/mooreeval-run-<pid>-XXXXXX/`, holding a file `owner.lock` on which the run
// keeps an exclusive flock(2) for its lifetime. The kernel releases the lock when the
// process ends however it ends (kill -9 included), so at the next start a run dir whose
// lock can be taken belongs to nobody alive and is removed; one whose lock is held is left
// alone (a concurrent run). A clean exit removes its own run dir.
//
// Thread-safety: a RunDir is owned by one thread; sweep_dead_runs() may run concurrently
// with other processes' runs (that is what the locks are for).
#pragma once

#include <filesystem>
#include <string>

#include "core/status.h"

namespace musacoder {

class RunDir {
 public:
  // Creates and locks a fresh run dir under `parent` (system temp dir when empty).
  static Result<RunDir> create(const std::filesystem::path& parent = {});
  RunDir(RunDir&& other) noexcept;
  RunDir& operator=(RunDir&&) = delete;
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;
  // Removes the directory (unless keep()), then releases the lock.
  ~RunDir();

  const std::filesystem::path& path() const { return path_; }
  void keep() { keep_ = true; }

 private:
  RunDir(std::filesystem::path p, int fd) : path_(std::move(p)), lock_fd_(fd) {}
  std::filesystem::path path_;
  int lock_fd_ = -1;
  bool keep_ = false;
};

struct SweepOutcome {
  int removed = 0;        // run dirs of dead runs removed
  int live = 0;           // run dirs left alone (their owner is alive)
  std::string first_error;  // the first removal that failed, if any
};

// Removes the run dirs under `parent` whose owner is gone (see the file comment).
SweepOutcome sweep_dead_runs(const std::filesystem::path& parent = {});

}  // namespace musacoder
