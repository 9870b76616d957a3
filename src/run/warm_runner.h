// The warm runner: one long-lived Python process (python/mooreeval_runner/zygote.py) that
// has imported torch and forks a fresh process per runner job, so a job starts in ~10 ms
// instead of ~5 s. Jobs stay separate processes: a crash, an illegal CUDA address or a
// timeout ends that job only (the zygote never touches CUDA, each job initialises its own
// context), and a deadline still kills the job's whole process group.
//
// A job is started as `python3 -m mooreeval_runner.warm_client SOCKET <runner argv>`: a
// short-lived process that hands its pipes to the zygote and then mirrors the job's exit,
// so to Subprocess and RunnerSession it is the job.
//
// Thread-safety: socket_path() and healthy() may be called from any thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "core/files.h"
#include "core/status.h"
#include "core/subprocess.h"

namespace musacoder::run {

struct RunnerOptions;

class WarmRunner {
 public:
  // Starts the zygote with the runner's interpreter and environment and waits until it has
  // imported torch (or `startup_deadline` passes). `parent_dir`: where its socket lives
  // (default: the system temp dir).
  static Result<std::unique_ptr<WarmRunner>> start(const RunnerOptions& options,
                                                   const std::filesystem::path& parent_dir,
                                                   std::chrono::milliseconds startup_deadline);
  ~WarmRunner();  // kills the zygote (and with it any job still running)

  const std::filesystem::path& socket_path() const { return socket_; }
  // Whether the zygote accepts connections (it may have died).
  bool healthy() const;

 private:
  WarmRunner(TempDir dir, std::unique_ptr<Subprocess> zygote);
  TempDir dir_;
  std::filesystem::path socket_;
  std::unique_ptr<Subprocess> zygote_;
};

}  // namespace musacoder::run
