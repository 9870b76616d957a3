// The MooreEval pipeline for one candidate:
//   extract -> inspect (runner) -> legality (static) -> build -> run reference and
//   candidate (separate runner processes, run slot held) -> numeric check -> benchmark
//   (only at 100% pass) -> consistency calls, speedup re-check -> legality (dispatched ops,
//   run-time findings, consistency) -> reward.
//
// Thread-safety: evaluate() may be called from many threads; at most `run_slots`
// candidates occupy the device at once, builds and inspections overlap freely.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>
#include <string_view>
#include <vector>

#include "mooreeval/compile/extension_build.h"
#include "mooreeval/compile/toolchain.h"
#include "core/files.h"
#include "mooreeval/pipeline/inspect_cache.h"
#include "mooreeval/runner/resident_references.h"
#include "mooreeval/runner/sandboxed_warm_pool.h"
#include "mooreeval/pipeline/timing_lock.h"
#include "mooreeval/pipeline/verdict.h"
#include "mooreeval/legality/legality.h"
#include "mooreeval/reward/reward.h"
#include "mooreeval/runner/runner.h"
#include "sandbox/sandbox.h"
#include "mooreeval/task/task.h"

namespace musacoder::eval {

// The seeds of one evaluation, recorded in its verdict (config.seeds): the reference's and the
// candidate's initialisation, one per trial's inputs, the consistency calls after the benchmark and
// the speedup re-check. Both sides always get the same ones.
struct EvalSeeds {
  uint64_t init = 0;
  std::vector<uint64_t> trials;  // one per trial (the task's trial count)
  std::vector<uint64_t> checks;  // three consistency calls
  uint64_t recheck = 0;
};

struct EvalOptions {
  build::Backend backend = build::Backend::kCpu;  // --backend
  std::string musa_sdk_version;    // --musa-sdk-version: musa backend, the SDK version required ("": any)
  std::string torch_musa_version;  // --torch-musa: musa backend, the torch_musa version required ("": any)
  double rtol = 1e-3;                             // --tolerance-rtol (a task's sidecar overrides)
  double atol = 1e-3;                             // --tolerance-atol (a task's sidecar overrides)
  int warmup_iters = 10;                          // --warmup-iters
  int benchmark_iters = 50;                       // --benchmark-iters
  std::chrono::milliseconds max_build{60000};     // --max-build-seconds
  std::chrono::milliseconds max_run{30000};       // --max-run-seconds (one runner process)
  int gpu_index = 0;                              // device the run slots use (cuda)
  int run_slots = 1;                              // candidates on the device at once (timed one at a time)
  // --prestart-runners: candidate runners that may be up ahead of the run slots (started
  // while their candidate is inspected and built, waiting at their gate); -1: 1 on cpu; on
  // GPU backends workers - run_slots, between 4 and 16 (each idle one holds a CUDA context,
  // ~0.5-1 GB of device memory). The sandboxed run pool has run_slots + this many members.
  int prestart_runners = -1;
  int workers = 1;  // concurrent evaluations this evaluator serves (set by each command; sizes defaults)
  // --cuda-max-connections: CUDA_DEVICE_MAX_CONNECTIONS for every runner on a GPU backend
  // (reference and candidate alike); 0 leaves the driver's default (8). One hardware queue
  // per context makes a fresh process's CUDA context ~2x cheaper to create, and creation is
  // serialised by the driver: on an H200, 4.5 set-ups/s at the default, 11 at 1
  // (perf/compile_throughput/process_costs.py). Streams then share that queue, which only
  // concurrent multi-stream work would notice (and side streams are illegal anyway).
  int cuda_max_connections = 1;
  bool flush_l2 = true;                               // flush L2 before each timed call (cuda)
  bool host_head_start = true;  // cuda: device-side wait before each timed call (timing.py); --no-host-head-start
  // --timing-rounds: the benchmark split into rounds, reference and candidate alternating (ABBA), the speedup
  // the median of the rounds' ratios; 0: the backend's default (timing_rounds_of)
  int timing_rounds = 0;
  // Runners start with glibc malloc tuned for repeatable timings (GLIBC_TUNABLES: one fixed mmap
  // threshold, no heap trimming), so an allocation of a given size costs the same on every call rather
  // than page-faulting on some: the cause of bimodal per-call times on cpu (docs/benchmarks.md,
  // reward stability). --no-stable-malloc turns it off.
  bool stable_malloc = true;
  std::size_t poison_bytes = std::size_t{256} << 20;  // cuda: allocator memory filled with NaN per trial
  int cpu_threads = 0;                                // torch intra-op threads in runners (0: torch default)
  std::optional<uint64_t> seed;                       // fixed seed for reproducible runs; default: fresh
  // --replay: every evaluation uses exactly these seeds (replay.h) instead of drawing fresh ones.
  std::optional<EvalSeeds> replay_seeds;
  int infra_retries = 1;                              // re-runs of an evaluation that hit infra_error
  std::size_t max_submission_bytes = 1 << 20;         // larger submissions are format errors
  std::size_t max_log_bytes = 16 << 10;               // log kept in the verdict
  std::filesystem::path work_root;                    // temp dirs (default: system temp)
  std::filesystem::path cache_dir;                    // build cache (empty: none)
  std::uint64_t cache_max_bytes = std::uint64_t{20}
                                  << 30;                  // --cache-max-gb: LRU eviction above (0: unbounded)
  build::BuildPath build_path = build::BuildPath::kAuto;  // --build-path auto|lean|full
  std::string lean_dir;      // --lean-dir (default: $MOOREEVAL_LEAN_DIR or the source tree)
  int build_workers = 0;     // --build-workers: builds at once (0: one per core)
  bool warm_runners = true;  // --no-warm-runners: fork jobs from a process that imported torch
  // --no-resident-reference: the reference runs in a resident server per run slot (device
  // set up once; resident_references.h) rather than in a fresh process per evaluation.
  // Needs warm_runners.
  bool resident_reference = true;
  bool keep_work_dirs = false;  // for debugging
  // Only the stages before the build: extract, inspect (the candidate module is imported with
  // load_inline recording, unless the AST rules already reject it) and the static legality rules;
  // no runner is started, nothing is built or run. `ok` at stage "legality" then means "not
  // rejected yet", not a score; any other verdict is the one a full evaluation reaches at the same
  // stage. For pre-screening, and for candidates that must never be built or run outside a sandbox
  // (the adversarial tests in a build without one). Not in to_json(): the verdict's message says it.
  bool static_only = false;
  reward::RewardOptions reward;
  legality::LegalityOptions legality;
  run::RunnerOptions runner;
  sandbox::SandboxOptions sandbox;  // --sandbox on|off|auto; sandbox.python is taken from runner.python

  nlohmann::json to_json() const;  // the resolved settings, saved with every verdict
};

// The benchmark's rounds: timing_rounds, or where 0 the backend's default — 5 on cpu (a shared host's speed
// drifts over seconds: alternating the sides keeps one slow spell from landing on one side only), 1 on the
// GPU backends (device events, measured stable: docs/benchmarks.md).
int timing_rounds_of(const EvalOptions& o);

struct EvalJob;  // one evaluation's state and stages (eval_job.h, private to the pipeline)

class Evaluator {
 public:
  explicit Evaluator(EvalOptions options);

  // Checks that the runner and toolchain are usable for the backend (probes once).
  // A non-ok Status is an infrastructure problem (e.g. "MUSA toolchain not found").
  Status prepare();

  // Evaluates one submission (a Python file's text or a raw model response).
  Verdict evaluate(const task::TaskSpec& task, std::string_view submission);

  // The format_error verdict for a submission that could not even be read (missing,
  // oversized file), scored like any other format error.
  Verdict reject_submission(const task::TaskSpec& task, const std::string& message) const;

  const EvalOptions& options() const { return options_; }

 private:
  friend struct EvalJob;  // the stages use the resources below
  Verdict evaluate_once(const task::TaskSpec& task, std::string_view submission);
  // "cpu", "cuda:N" or "musa:N" (the runner's device), and the sandbox job kind of a run on it.
  std::string device_string() const;
  sandbox::JobKind run_job_kind() const;
  // A verdict with the task, backend and resolved settings filled in, nothing decided.
  Verdict new_verdict(const task::TaskSpec& task) const;
  // Fills the reward from the verdict's facts (none for infra_error).
  void score(Verdict& v) const;
  Result<build::Toolchain> toolchain();
  // The runner's toolchain probe result (cached for the cpu backend: runner/probe_cache.h).
  Result<nlohmann::json> probe_toolchain();
  // The lean shim for this backend, prepared on first use; null when the lean path is off
  // or unavailable (lean_note_ says why; builds then take the full path).
  const build::LeanShim* lean_shim(const build::Toolchain& toolchain);
  // The runner options for one job: with the warm runner when it is on and healthy (it is
  // (re)started here), else cold interpreter starts.
  run::RunnerOptions runner_options();
  // The sandboxed warm runners for candidate code (started on first use); null when the
  // sandbox or warm runners are off (jobs then start cold in their sandbox).
  enum class UntrustedRole { kInspect, kRun };
  SandboxedWarmPool* untrusted_pool(UntrustedRole role);
  // The sandbox, created on first use (logs once to stderr when it is off or degraded).
  // Non-ok only in mode on when no sandbox works here.
  Result<sandbox::Sandbox*> sandbox();
  uint64_t next_seed();
  // The seeds of one evaluation with `trials` trials: options_.replay_seeds, else freshly drawn.
  EvalSeeds draw_seeds(int trials);
  // Remembered inspections, in the build cache's directory (created on first use).
  const InspectCache& inspect_cache();
  // Candidate runners alive at once: the run slots plus those started ahead of them.
  int candidate_runners() const;
  // The resident reference servers (started on first use); null when they are off or none
  // came up (references then start per evaluation).
  ResidentReferences* resident_references();

  EvalOptions options_;
  std::mutex mu_;  // guards toolchain_, rng state
  std::optional<build::Toolchain> toolchain_;
  std::mutex sandbox_mu_;  // guards sandbox_, sandbox_error_
  std::unique_ptr<sandbox::Sandbox> sandbox_;
  std::optional<Status> sandbox_error_;
  uint64_t seed_state_ = 0;
  std::unique_ptr<std::counting_semaphore<>> run_slots_;
  std::unique_ptr<std::counting_semaphore<>> candidate_permits_;  // candidate_runners() of them
  std::unique_ptr<std::counting_semaphore<>> build_slots_;
  TimingLock timing_lock_;  // the device: shared by the run slots' untimed work, alone for timing
  std::mutex lean_mu_;      // guards the lean_* members (held while the shim builds)
  bool lean_prepared_ = false;
  std::optional<build::LeanShim> lean_shim_;
  std::string lean_note_;
  std::optional<TempDir> lean_scratch_;  // where the shim is built when there is no cache
  std::mutex warm_mu_;                   // guards warm_*
  std::shared_ptr<const run::WarmRunner> warm_;
  int warm_starts_ = 0;
  std::string warm_note_;
  std::once_flag inspect_cache_once_;
  std::optional<InspectCache> inspect_cache_;
  std::mutex pool_mu_;  // guards the pools' creation
  bool pools_started_ = false;
  std::unique_ptr<SandboxedWarmPool> run_pool_;      // candidate runs (on cpu: inspections too)
  std::unique_ptr<SandboxedWarmPool> inspect_pool_;  // inspections on the GPU backends (no GPU)
  std::once_flag references_once_;
  std::unique_ptr<ResidentReferences> references_;
};

}  // namespace musacoder::eval
