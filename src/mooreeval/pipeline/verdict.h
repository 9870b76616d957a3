// The result of evaluating one candidate (JSON schema: docs/verdict.schema.json).
#pragma once

#include <algorithm>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "mooreeval/legality/legality.h"
#include "mooreeval/reward/reward.h"

namespace musacoder::eval {

enum class VerdictClass {
  kOk,            // compiled, every trial within tolerance
  kFormatError,   // no usable submission: empty, not UTF-8, too big, no ModelNew, Python syntax
  kCompileError,  // the extension did not compile or link
  kRuntimeError,  // the candidate crashed or raised
  kTimeout,       // build or run exceeded its deadline
  kWrongAnswer,   // ran, but some trial's outputs are wrong (values, shape, dtype, NaN)
  kIllegal,       // did not compute with its own kernel (fallback, reference call, ...)
  kInfraError,    // our failure, not the candidate's: never scored (reward is null)
};

const char* verdict_name(VerdictClass v);

// The stage that decided a verdict, in pipeline order; stage_name is the verdict JSON's "stage".
enum class Stage {
  kNone,       // "": not decided yet
  kQueue,      // the service gave up on the job before it ran (shutdown, cancellation)
  kExtract,    // the submission's text
  kPrepare,    // our set-up: toolchain, sandbox, work directory
  kInspect,    // importing the candidate's module to read its extension specs
  kLegality,   // the static rules
  kBuild,      // compile and link
  kRun,        // the candidate's process
  kVerify,     // the numeric check
  kBenchmark,  // timing
};

const char* stage_name(Stage s);

struct TimingStats {
  double median_ms = 0, p10_ms = 0, p90_ms = 0, min_ms = 0;
  int iters = 0;
  // cuda: the host's time per call (warm-up), the device-side wait before each timed call, and how often
  // the timed loop ran again because the host had fallen behind the device (timing.py)
  std::optional<double> host_ms, head_start_ms;
  std::optional<int> host_behind_retries;
  // with timing rounds (EvalOptions::timing_rounds): each round's median, in order; median_ms is then their
  // median, p10/min the lowest and p90 the highest of the rounds', iters their sum
  std::vector<double> rounds_median_ms;
};

// The second timing method, run when the first speedup exceeded the threshold
// (LegalityOptions::recheck_speedup_above); the verdict keeps the smaller speedup.
struct SpeedupCheck {
  double threshold = 0;                       // the speedup that triggered it
  double event_speedup = 0;                   // first method: median of per-call timings
  double recheck_speedup = 0;                 // second method: reference_ms / candidate_ms below
  double reference_ms = 0, candidate_ms = 0;  // mean per call, wall clock over distinct input sets
  std::string method;                         // "wall_clock_batch"
  // The two methods disagree by more than kTimingDisagreement (either way): the verdict's message says
  // so and `disagreement` is set, so that a consumer never trusts such a speedup silently.
  static constexpr double kTimingDisagreement = 2.0;
  bool disagreement() const {
    const double lo = std::min(event_speedup, recheck_speedup), hi = std::max(event_speedup, recheck_speedup);
    return lo > 0 && hi / lo > kTimingDisagreement;
  }
};

struct StageSeconds {
  double extract = 0, inspect = 0, build = 0, run = 0, benchmark = 0, total = 0;
  double run_wait = 0;    // waiting for a run slot (not in run: that counts from the slot)
  double build_wait = 0;  // waiting for a build slot (not in build)
  // The build's compilers ("nvcc", "c++": concurrent) and "link", wall seconds each.
  std::map<std::string, double> build_steps;
  // The orchestrator's own steps while it holds the run slot, in seconds: acquiring the
  // reference runner, until it is ready, until both outputs are in, comparing them, the
  // benchmark, until the candidate's process has ended.
  std::map<std::string, double> slot;
  // Per side ("reference", "candidate"): the runner's own seconds per step (setup, waiting,
  // load, trials, timing, checks, profile), when it finished with a result.
  nlohmann::json runners = nlohmann::json::object();
};

struct Verdict {
  std::string task_id;
  std::string backend;
  VerdictClass verdict = VerdictClass::kInfraError;
  std::string message;  // one line: why this verdict
  Stage stage = Stage::kNone;  // the stage that decided
  bool compiled = false;
  int trials = 0;
  int passed = 0;
  double max_abs_error = 0, max_rel_error = 0;
  std::optional<TimingStats> reference_time, candidate_time;
  std::optional<double> speedup;              // the conservative one when speedup_check is set
  std::optional<SpeedupCheck> speedup_check;  // set when the speedup was re-measured
  reward::RewardBreakdown reward;
  std::string reward_scheme;
  StageSeconds seconds;
  bool cache_hit = false;
  bool inspect_cached = false;  // the inspection was recalled (eval/inspect_cache.h), not run
  std::string build_path;       // "lean", "full", "mixed"; "" when nothing was built
  int attempts = 1;             // > 1 when infrastructure failures were retried
  std::vector<legality::Finding> legality;
  std::string candidate_sha256;
  std::string log;        // compiler / runner output, truncated
  nlohmann::json config;  // the resolved evaluation settings

  bool scored() const { return verdict != VerdictClass::kInfraError; }
};

nlohmann::json to_json(const Verdict& v);

}  // namespace musacoder::eval
