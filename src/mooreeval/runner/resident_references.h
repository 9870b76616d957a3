// Resident reference runners: one long-lived server per run slot (run/warm_runner.h,
// resident mode) that has set up the device once and runs the task's reference in its own
// process, so an evaluation starts one CUDA context (its candidate's), not two.
//
// A reference is trusted task code; candidate code never reaches these servers. The job
// inside a server cannot be killed alone: a job past its deadline ends its server, and the
// next acquire() replaces a member that no longer answers (a few times over the pool's
// life; then that member is gone and callers start their references the old way).
//
// Leases are taken while the run slot is held, so with as many members as run slots,
// acquire() does not wait for long: at most until the previous holder's reference exits.
//
// Thread-safety: acquire() may be called from many threads; a Lease is used by one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "mooreeval/runner/runner.h"
#include "mooreeval/runner/warm_runner.h"

namespace musacoder::eval {

struct ResidentReferenceOptions {
  run::RunnerOptions runner;   // interpreter, runner dir, environment (warm is ignored)
  std::string device;          // "cpu" or "cuda:N"
  int size = 1;                // members: one per run slot
  std::filesystem::path root;  // their private dirs go here (default: system temp)
  std::chrono::milliseconds startup_deadline{120000};
  int max_replacements = 3;  // members restarted after dying, over the pool's life
};

class ResidentReferences {
  struct Member;

 public:
  // Starts the members in parallel and waits until each is up or has failed. Members that
  // fail are left out (note() says why); a pool without members hands out nothing.
  static std::unique_ptr<ResidentReferences> start(ResidentReferenceOptions options);
  ~ResidentReferences();

  class Lease {
   public:
    Lease(Lease&& o) noexcept;
    Lease& operator=(Lease&&) = delete;
    ~Lease();  // the member is idle again
    // Runner options whose reference jobs run in this member.
    run::RunnerOptions runner_options() const;

   private:
    friend class ResidentReferences;
    Lease(ResidentReferences* pool, Member* member) : pool_(pool), member_(member) {}
    ResidentReferences* pool_;
    Member* member_;
  };

  // An idle member that answers (replaced first if it died); waits while all are busy.
  // nullopt when none is left.
  std::optional<Lease> acquire();

  int members() const;
  std::string note() const;  // why members are missing or were replaced ("" when none)

 private:
  explicit ResidentReferences(ResidentReferenceOptions options);
  Result<std::shared_ptr<const run::WarmRunner>> start_server() const;
  void release(Member* m);

  ResidentReferenceOptions options_;
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  std::vector<std::unique_ptr<Member>> members_;  // guarded by mu_
  int replacements_ = 0;                          // guarded by mu_
  std::string note_;                              // guarded by mu_
};

}  // namespace musacoder::eval
