// The trainer's one door to the verifier (MooreEval): in process through data::Verifier (--reward-env
// mooreeval) or the MooreEval HTTP service (--reward-env http://HOST:PORT, a Redis-backed fleet behind it).
// Every verifier call of train-rl goes through this file pair, so moving to src/mooreeval/mooreeval.h later
// changes these two files only.
//
// Jobs are submitted one at a time as each sample finishes generating; `workers` of them are verified at once,
// so builds overlap the rest of the generation. A verifier that cannot be reached is never a zero: the service
// client retries (backoff) for up to `wait_seconds` and then reports an infra_error whose message says the
// verifier is down; the trainer re-submits infra errors and drops what still fails from the group statistics.
//
// Thread-safety: submit() may be called from any thread (engine callbacks included); `done` runs on one of
// the env's worker threads and must not block for long. The destructor waits for queued jobs to finish.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"

namespace musacoder::train::rl {

struct RewardEnvOptions {
  std::string endpoint = "mooreeval";  // "mooreeval" (in process) or http://HOST:PORT
  std::string backend = "cpu";         // in process: what candidates run on (cpu | cuda | musa)
  int workers = 8;                     // verifications in flight
  int run_slots = 0;                   // in process: candidates on the device at once (0: default_run_slots)
  double wait_seconds = 120;           // service: how long an unreachable service is retried per job
  std::filesystem::path cache_dir;     // in process: the build cache (empty: none)
  std::filesystem::path work_root;     // in process: temp dirs (empty: system temp)
  std::optional<uint64_t> seed;        // in process: the numeric trials' seed base (unset: fresh each time)
  std::string build_path = "auto";     // in process: auto | lean | full (data::VerifierSettings::build_path)
};

struct RewardJob {
  std::string task_id;               // "activation/relu" (the service's task id in service mode)
  std::filesystem::path task_path;   // the task's .py (in process)
  std::string response;              // the model's full answer (the verifier extracts the code)
};

struct Reward {
  nlohmann::json verdict;      // the verdict in docs/verdict.schema.json
  std::string verdict_class;   // ok, format_error, compile_error, ..., infra_error
  double score = 0.0;          // the verdict's reward in [0, 1] (0 for infra_error: never used as a score)
  bool infra_error() const { return verdict_class == "infra_error"; }
  bool passed() const { return verdict_class == "ok"; }
};

// The reward of a verdict JSON (missing fields: a malformed verdict is an infra_error).
Reward reward_of(const nlohmann::json& verdict);

class RewardEnv {
 public:
  // In process: builds the verifier and checks its runner and toolchain. Service: checks /healthz, waiting up
  // to wait_seconds (kUnavailable naming the address when it never answers).
  static Result<std::unique_ptr<RewardEnv>> create(const RewardEnvOptions& options);
  virtual ~RewardEnv() = default;
  virtual void submit(RewardJob job, std::function<void(Reward)> done) = 0;
  virtual std::string describe() const = 0;  // "mooreeval (in process, cpu)" / "http://..."
};

}  // namespace musacoder::train::rl
