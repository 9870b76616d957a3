// The Python runner (python/mooreeval_runner) as seen from C++: one fresh process per
// call, job JSON in, result JSON out, progress via a phase file, and for the reference
// and candidate modes a two-step dialogue: the runner announces "outputs_ready" on its
// control pipe and waits for "bench" or "exit" on stdin.
//
// Thread-safety: independent calls may run concurrently.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"
#include "process/subprocess.h"
#include "mooreeval/runner/warm_runner.h"

namespace musacoder::run {

struct RunnerOptions {
  std::string python = "python3";                // interpreter that has torch
  std::filesystem::path runner_dir;              // directory that holds mooreeval_runner/
  std::map<std::string, std::string> extra_env;  // added to every runner's environment
  std::size_t max_log_bytes = 256 << 10;         // per stream captured from the runner
  // When set, inspect/reference/candidate jobs are forked by this warm runner instead of
  // starting a fresh interpreter (see warm_runner.h); probe always starts fresh.
  std::shared_ptr<const class WarmRunner> warm;
};

struct RunnerCall {
  std::string mode;                // probe | inspect | reference | candidate
  nlohmann::json job;              // the job description (see the runner's modes)
  std::filesystem::path work_dir;  // job, result and phase files go here
  std::chrono::milliseconds deadline{30000};
  std::map<std::string, std::string> env;  // per-call environment additions
  ProcessWrapper sandbox;                  // applied to the runner process (src/sandbox); empty: none
};

struct RunnerOutcome {
  ProcessResult process;
  std::optional<nlohmann::json> result;  // the result JSON, when the runner wrote one
  std::string phase;                     // last progress marker ("" if none)
  std::string error;                     // why there is no result, when there is none
  // Wall-clock seconds (since the epoch) when the orchestrator started the runner process
  // and when it saw that process end; with the result's "clock" (when the job's own code
  // started and ended) they tell the cost of starting a job and of learning it ended.
  double spawned_at = 0.0, ended_at = 0.0;
};

// The runner's own seconds per step (its result's "seconds") plus "start" (spawning the
// process until the job's code ran: interpreter or fork, client hand-over) and "end" (the
// job's last line until its end was seen here: exit, reaping, a warm runner's clean-up).
// An empty object when the runner wrote no result.
nlohmann::json runner_seconds(const RunnerOutcome& outcome);

// A started runner in dialogue mode.
class RunnerSession {
 public:
  static Result<std::unique_ptr<RunnerSession>> start(const RunnerOptions& options, const RunnerCall& call);
  // True when the runner announced `line` ("loaded", "outputs_ready") on its control
  // pipe; false if it exited or hit its deadline first.
  bool wait_for(const std::string& line);
  // Sends one word of the dialogue ("run", "bench", "exit").
  void command(const std::string& word);
  // A new deadline, `from_now` after this call (see Subprocess::set_deadline).
  void set_deadline(std::chrono::milliseconds from_now);
  // Closes the runner's stdin (which it reads as "exit" at any gate), waits for it to
  // exit and collects the outcome.
  RunnerOutcome finish();

 private:
  RunnerSession() = default;
  std::unique_ptr<Subprocess> process_;
  std::filesystem::path result_path_, phase_path_;
  double spawned_at_ = 0.0;
};

// The environment every runner process (and the warm runner's zygote) gets on top of the
// inherited one: extra_env, PYTHONPATH with the runner dir first, unbuffered output, no
// bytecode files written next to the runner, and OMP_WAIT_POLICY=PASSIVE unless extra_env sets it
// (idle OpenMP pools sleep at once, so they never look like work left running after forward).
std::map<std::string, std::string> runner_environment(const RunnerOptions& options);

// Runs a non-dialogue mode (probe, inspect) to completion.
Result<RunnerOutcome> run_runner(const RunnerOptions& options, const RunnerCall& call);

// The runner directory: `explicit_dir` if set, else $MOOREEVAL_RUNNER_DIR, else the
// source tree's python/ (compiled in). Fails if mooreeval_runner/ is not inside.
Result<std::filesystem::path> locate_runner_dir(const std::string& explicit_dir);

}  // namespace musacoder::run
