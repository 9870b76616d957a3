// One evaluation of one candidate: what its stages share, and the stages themselves, one file each
// (stage_*.cpp), run in order by Evaluator::evaluate_once:
//
//   prepare     extract the candidate, its sandbox and work dirs, its seeds and runner jobs
//   start       the reference and candidate runners (they import torch while we inspect and build)
//   inspect     the runner imports the candidate; the static legality rules
//   compile     the candidate's extensions; the legality rules on the libraries
//   trials      both sides' trials in the run slot, and the numeric check
//   benchmark   timed, only at 100% pass; the speedup re-check; both runners end
//   judge       the dynamic legality rules, then the verdict
//
// A stage returns the final verdict (finalized: scored, log attached, total time set) when it
// decided one, or nullopt to go on. Everything the evaluation holds (sandbox uid, work dirs,
// runner processes, leases, permits) is a member, released when the EvalJob is destroyed, in the
// reverse order of the members below; the run slot and the timing lock are released earlier,
// where the stages say.
//
// Private to src/mooreeval/pipeline/. Thread-safety: one thread per EvalJob; what it shares with
// other evaluations is the Evaluator's (thread-safe) resources.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/files.h"
#include "mooreeval/pipeline/evaluator.h"
#include "mooreeval/pipeline/job_sandbox.h"
#include "mooreeval/runner/protocol.h"
#include "mooreeval/runner/untrusted_job.h"
#include "mooreeval/verify/compare.h"
#include "mooreeval/verify/output_file.h"

namespace musacoder::eval {

using Clock = std::chrono::steady_clock;

// Seconds since `t`.
double since(Clock::time_point t);

// The runner protocol's words (runner/protocol.h) as the JSON keys and control-pipe lines they are.
std::string key(run::JobKey k);
std::string gate(run::Gate g);
std::string command(run::Command c);

// Builds a Verdict step by step; `fail()` fixes the class and where it was decided.
struct Draft {
  Verdict v;
  std::string log;
  Verdict& fail(VerdictClass c, Stage stage, const std::string& message) {
    v.verdict = c;
    v.stage = stage;
    v.message = message;
    return v;
  }
};

// A runner's stdout, stderr and traceback, for the verdict's log.
std::string runner_log(const run::RunnerOutcome& o);

// What a candidate process's end means when it did not finish cleanly.
Verdict& classify_candidate_failure(Draft& d, const run::RunnerOutcome& o, Stage stage,
                                    double max_run_seconds);

// The runner's own per-step seconds ("seconds" in its result), under `side` in the verdict.
void note_runner_seconds(Verdict& v, const std::string& side, const run::RunnerOutcome& o);

// A runner result's {"timing": {...}}, if it has one.
std::optional<TimingStats> timing_from(const nlohmann::json& result);

// How long a runner waits for its run slot at most, before the slot sets its real deadline
// (RunnerSession::set_deadline): long, since the evaluation itself ends it (a session is
// killed when destroyed), and a queue of many workers for one slot can be long.
constexpr std::chrono::milliseconds kBeforeRunSlot = std::chrono::hours(24);

// A candidate runner and what it holds: destroyed in reverse order (the process first,
// then its warm member's lease, then the permit).
struct CandidateRun {
  Permit permit;
  UntrustedJob place;
  std::unique_ptr<run::RunnerSession> session;
  std::filesystem::path late_job;  // where it reads the part of its job that the build decides
};

struct EvalJob {
  EvalJob(Evaluator& evaluator, const task::TaskSpec& task);

  // The stages, in order (see the top of this file).
  std::optional<Verdict> prepare(std::string_view submission);  // stage_prepare.cpp
  std::optional<Verdict> start_runners();                       // stage_prepare.cpp
  std::optional<Verdict> inspect();                             // stage_inspect.cpp
  std::optional<Verdict> compile();                             // stage_compile.cpp
  std::optional<Verdict> trials();                              // stage_trials.cpp
  std::optional<Verdict> benchmark();                           // stage_benchmark.cpp
  Verdict judge();                                              // stage_judge.cpp
  // EvalOptions::static_only: the verdict of a candidate that passed inspect().
  Verdict passed_static_checks();  // stage_inspect.cpp

  // The verdict as returned: scored, with the log and the total time.
  Verdict finalize(Verdict& v);
  // finalize(d.fail(c, stage, message)).
  Verdict stop(VerdictClass c, Stage stage, const std::string& message);

  // Adds the time since the last lap to the verdict's seconds.slot[step].
  void slot_lap(const char* step);

  // prepare(): the job of each side. start_runners(), trials(): the runners' starts.
  void describe_jobs();
  Result<std::unique_ptr<run::RunnerSession>> start_reference(const run::RunnerOptions& r,
                                                              std::chrono::milliseconds deadline);
  Result<std::optional<CandidateRun>> start_candidate(Permit permit,
                                                      std::vector<std::filesystem::path> read_only,
                                                      bool early);
  // compile(): how the extensions are built (in the sandbox, when it is on); sets `shim`.
  build::BuildOptions build_options();
  // trials(): the numeric check of both sides' outputs.
  std::optional<Verdict> check_outputs();
  // trials(): the candidate's late job file (its libraries, kernel names, fallback blocks).
  std::optional<Verdict> hand_over_late_job();
  // trials(): the reference runner, up to its "loaded" gate.
  std::optional<Verdict> acquire_reference();
  // benchmark(): both sides timed, then the re-measurement when the speedup looks too good.
  std::optional<Verdict> time_both_sides();
  // Round r of the benchmark: both sides time (again), the reference first in even rounds and the
  // candidate first in odd ones (ABBA). False when a side did not time (its runner's outcome says why when
  // it is finished).
  bool timing_round(int r);
  void recheck_speedup(double event_speedup);
  // judge(): the dynamic legality rules' findings into d.v.legality.
  std::optional<Verdict> check_run_legality();

  // What the whole evaluation shares, in the order it is set up (and released in reverse).
  Evaluator& ev;
  const EvalOptions& options;
  const task::TaskSpec& task;
  const Clock::time_point t_start;
  Draft d;
  const verify::Tolerance tol;
  const double max_run_seconds;

  // prepare()
  std::string source;  // the extracted candidate
  std::optional<build::Toolchain> toolchain;
  std::optional<sandbox::JobSandbox> jail;  // one uid for every process of this evaluation
  std::optional<TempDir> work;
  JobDirs dirs;
  std::filesystem::path candidate_path, task_path, runner_dir;
  sandbox::JobKind run_kind = sandbox::JobKind::kRunCpu;
  EvalSeeds seeds;
  nlohmann::json common;      // both sides' job
  nlohmann::json ref_job;     // the reference's
  run::RunnerOptions runner;  // trusted (task code): the warm runner when it is up
  run::RunnerOptions cold;    // untrusted jobs that start cold

  // start_runners(), trials()
  ResidentReferences* residents = nullptr;
  std::optional<ResidentReferences::Lease> ref_lease;  // outlives the reference's session
  std::unique_ptr<run::RunnerSession> reference;
  std::optional<CandidateRun> cand_run;

  // inspect()
  std::vector<build::ExtensionSpec> specs;
  nlohmann::json fallback_blocks = nlohmann::json::array();  // forward's blocks with PyTorch compute:
                                                             // the run must not enter them
  // compile()
  const build::LeanShim* shim = nullptr;
  build::BuildReport built;

  // trials(), benchmark()
  std::optional<Permit> run_slot;
  Clock::time_point slot_last;
  std::filesystem::path cand_dir;  // the candidate runner's work dir (as we see it)
  std::vector<verify::TrialOutputs> ref_out;
  verify::NumericReport numeric;
  bool all_pass = false;
  std::vector<double> ref_rounds, cand_rounds;  // each benchmark round's median, per side, in order
  run::RunnerOutcome ref_done, cand_done;
};

}  // namespace musacoder::eval
