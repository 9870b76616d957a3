// Warm runners for untrusted jobs (a candidate's inspection and its run): the speed of a
// forked warm job with the isolation of a cold one in its own sandbox.
//
// Each member is one zygote (run/warm_runner.h, exclusive mode) started inside a sandbox
// of its own (sandbox.h: its own leased uid, pid/net/ipc/mount namespaces, seccomp, limits;
// for CUDA jobs exactly one GPU's device nodes). It serves one job at a time, in its job
// dir: the only host path the member may write, and besides the sandbox's system dirs and
// `WarmPoolOptions::job.read_only` the only one it sees. Between two jobs the zygote kills
// every process the last job left (setsid'ed ones too: they are all in its pid namespace)
// and empties /tmp, /dev/shm and SysV IPC; acquire() waits for that (a ping is answered
// only after it) and empties the job dir.
//
// A job's inputs (candidate.py, the task file, built libraries) are copied into the job
// dir's in/ (owned by the orchestrator, read-only to the job), since the member's mounts
// are fixed when it starts; its outputs are read back from the job dir while the lease is
// held.
//
// Thread-safety: acquire() may be called from many threads; a Lease is used by one.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/status.h"
#include "mooreeval/runner/runner.h"
#include "sandbox/sandbox.h"

namespace musacoder::eval {

struct WarmPoolOptions {
  run::RunnerOptions runner;                  // interpreter, runner dir, environment (warm is ignored)
  const sandbox::Sandbox* sandbox = nullptr;  // active; outlives the pool
  // The members' sandbox: kind, GPU, address-space limit, and the read-only paths every
  // job needs (the runner dir, the lean shim). work_dir is each member's own job dir.
  sandbox::SandboxJob job;
  int size = 1;                // members
  std::filesystem::path root;  // their dirs go here (default: system temp)
  std::chrono::milliseconds startup_deadline{120000};
  int max_replacements = 3;  // members replaced after dying, over the pool's life
};

class SandboxedWarmPool {
  struct Member;

 public:
  // Starts the members in parallel and waits until each is up or has failed. Members that
  // fail are left out (note() says why); a pool without members is valid and hands out
  // nothing (callers then start their jobs cold).
  static std::unique_ptr<SandboxedWarmPool> start(WarmPoolOptions options);
  ~SandboxedWarmPool();

  // One member, exclusively, until the lease is destroyed.
  class Lease {
   public:
    Lease(Lease&& o) noexcept;
    Lease& operator=(Lease&&) = delete;
    ~Lease();  // the member is idle again
    // Where the job runs and writes (its cwd and output paths belong here).
    const std::filesystem::path& job_dir() const;
    // Copies `file` into the job dir's in/ as `name`, read-only; returns the copy's path.
    // (staged_path: where stage() puts `name`, known before the file is.)
    std::filesystem::path staged_path(const std::string& name) const;
    Result<std::filesystem::path> stage(const std::filesystem::path& file, const std::string& name) const;
    // The runner options that fork the job in this member (no ProcessWrapper needed: the
    // member is already sandboxed).
    run::RunnerOptions runner_options() const;

   private:
    friend class SandboxedWarmPool;
    Lease(SandboxedWarmPool* pool, Member* member) : pool_(pool), member_(member) {}
    SandboxedWarmPool* pool_;
    Member* member_;
  };

  // An idle, clean member; waits while all are busy. nullopt when none is left (every
  // member failed and the replacements are used up): start the job cold.
  std::optional<Lease> acquire();

  int members() const;
  std::string note() const;  // why members are missing ("" when none is)

 private:
  explicit SandboxedWarmPool(WarmPoolOptions options);
  Result<std::unique_ptr<Member>> start_member() const;
  // Healthy, job dir emptied and in/ made: ready for a job. Otherwise: retire it.
  Status make_ready(Member& m) const;
  void release(Member* m);

  WarmPoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  std::vector<std::unique_ptr<Member>> members_;  // guarded by mu_
  int replacements_ = 0;
  std::string note_;
};

}  // namespace musacoder::eval
