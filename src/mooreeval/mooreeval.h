// MooreEval, the verifier: the one header that code outside src/mooreeval/ includes.
//
//   auto evaluator = mooreeval::Evaluator::create(options);        // probes the toolchain once
//   mooreeval::Verdict v = (*evaluator)->evaluate(task, response);  // one candidate
//   (*evaluator)->submit({task, response}, [](mooreeval::Verdict v) { ... });  // while generating
//
// A verdict is one of ok, format_error, compile_error, runtime_error, timeout, wrong_answer,
// illegal, infra_error (docs/verdict.schema.json); infra_error is ours, never the candidate's,
// and carries no reward. Everything else about the pipeline (runners, pools, build paths,
// the runner protocol) is internal to src/mooreeval/.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "mooreeval/legality/legality.h"
#include "mooreeval/pipeline/verdict.h"
#include "mooreeval/reward/reward.h"
#include "mooreeval/task/task.h"
#include "sandbox/sandbox.h"

namespace musacoder::mooreeval {

using Task = task::TaskSpec;         // a KernelBench-format task (load_task / load_suite)
using Verdict = eval::Verdict;       // the result of one evaluation; to_json(v) writes the schema
using VerdictClass = eval::VerdictClass;
using Stage = eval::Stage;  // where a verdict was decided; stage_name(s) is its JSON word
using eval::stage_name;
using eval::to_json;
using eval::verdict_name;

// Loads one task file (its sidecar JSON next to it); `id` as shown in verdicts ("norm/softmax").
Result<Task> load_task(const std::filesystem::path& file, const std::string& id);

// ---------------------------------------------------------------------------------------------
// Options. Each group affects one thing; defaults are the CLI's (tools/mooreeval). Every group's
// to_json() is saved with every verdict (Verdict::config), so a result names its settings.

// What is checked, and how strictly. Affects verdicts.
struct CheckOptions {
  double rtol = 1e-3;  // allclose relative tolerance (a task's sidecar overrides it)
  double atol = 1e-3;  // allclose absolute tolerance (a task's sidecar overrides it)
  // Base of the per-evaluation seeds (initialisation and trial inputs); unset: fresh seeds from the OS,
  // so a candidate can never learn its inputs. Every verdict records the seeds it used.
  std::optional<std::uint64_t> seed;
  // cuda: allocator memory filled with NaN bytes before each trial, so uninitialised outputs fail.
  std::size_t poison_bytes = std::size_t{256} << 20;
  std::size_t max_submission_bytes = std::size_t{1} << 20;  // a larger submission is a format_error
  // Only the stages before the build (extract, inspect, the static legality rules): nothing is built
  // or run, and `ok` at stage legality means "not rejected yet". For pre-screening, and for candidates
  // that must never run outside a sandbox.
  bool static_only = false;
  nlohmann::json to_json() const;
};

// How the benchmark (run only at 100% pass) measures. Affects speedups and rewards.
struct TimingOptions {
  int warmup_iters = 10;     // untimed calls before the timed ones
  int benchmark_iters = 50;  // timed calls per side
  bool flush_l2 = true;      // cuda: flush L2 before each timed call
  // cuda: a device-side wait before each timed call, twice the host's time per call, so that a slow
  // call path (Python, wrappers) cannot leave the device idle inside the timed interval.
  bool host_head_start = true;
  // The benchmark split into this many rounds, reference and candidate alternating (ABBA); the speedup is
  // the median of the rounds' ratios. 0: 5 on cpu, 1 on the GPU backends.
  int rounds = 0;
  // glibc malloc tuned for repeatable timings in runners (fixed mmap threshold, no trimming).
  bool stable_malloc = true;
  nlohmann::json to_json() const;
};

// Wall-clock limits; past one the verdict is timeout (ours: infra_error, retried).
struct DeadlineOptions {
  std::chrono::milliseconds max_build{60000};  // every extension of one candidate together
  std::chrono::milliseconds max_run{30000};    // one runner process (counted from its run slot)
  int infra_retries = 1;                       // re-runs of an evaluation that hit infra_error
  nlohmann::json to_json() const;
};

// How much runs at once. Affects throughput and device memory, never verdicts.
struct ConcurrencyOptions {
  int workers = 1;     // evaluations in flight (evaluate_batch's threads, submit()'s queue workers)
  int run_slots = 1;   // candidates on the device at once; benchmarks always have it alone
  int gpu_index = 0;   // the device the run slots use (cuda, musa)
  // Candidate runners started ahead of the run slots (they wait at their gate while their candidate
  // builds); -1: 1 on cpu, else workers - run_slots clamped to 4..16 (each idle one holds a context).
  int prestart_runners = -1;
  int build_workers = 0;  // builds at once (0: one per core)
  nlohmann::json to_json() const;
};

// The build stage (docs/build.md).
struct CompileOptions {
  std::string backend = "cpu";      // cpu | cuda | musa
  std::string build_path = "auto";  // auto | lean | full (lean where it compiles, else full)
  std::string lean_dir;             // lean headers and shim (empty: $MOOREEVAL_LEAN_DIR or the source tree)
  std::filesystem::path cache_dir;  // content-addressed build cache (empty: none)
  std::uint64_t cache_max_bytes = std::uint64_t{20} << 30;  // LRU eviction above (0: unbounded)
  std::string musa_sdk_version;    // musa: the SDK version required ("": any)
  std::string torch_musa_version;  // musa: the torch_musa version required ("": any)
  nlohmann::json to_json() const;
};

// The build cache every tool (mooreeval, musacoder synth/eval-model/quickstart) uses unless told otherwise:
// $XDG_CACHE_HOME/mooreeval/builds, else ~/.cache/mooreeval/builds; empty (no cache) when neither is set.
std::filesystem::path default_cache_dir();

// The Python runner processes (python/mooreeval_runner).
struct RunnerOptions {
  std::string python = "python3";      // interpreter that has torch
  std::filesystem::path runner_dir;    // holds mooreeval_runner/ (empty: $MOOREEVAL_RUNNER_DIR or the tree)
  std::map<std::string, std::string> extra_env;  // added to every runner's environment
  bool warm_runners = true;            // fork jobs from a zygote that imported torch once
  bool resident_reference = true;      // references in a resident server per run slot (needs warm_runners)
  int cpu_threads = 0;                 // torch intra-op threads in runners (0: torch's default)
  int cuda_max_connections = 1;        // CUDA_DEVICE_MAX_CONNECTIONS for GPU runners (0: driver default)
  std::size_t max_log_bytes = 16 << 10;  // runner/compiler log kept in a verdict
  std::filesystem::path work_root;     // per-evaluation temp dirs (empty: system temp)
  bool keep_work_dirs = false;         // keep them (debugging)
  nlohmann::json to_json() const;
};

// The resolved evaluation settings. The sandbox, legality and reward groups are the components' own
// option structs (sandbox/sandbox.h, legality.h, reward.h: each field documented there).
struct Options {
  CheckOptions check;
  TimingOptions timing;
  DeadlineOptions deadlines;
  ConcurrencyOptions concurrency;
  CompileOptions compile;
  RunnerOptions runner;
  sandbox::SandboxOptions sandbox;    // per-job jail; mode auto degrades to none with a logged reason
  legality::LegalityOptions legality;  // static and run-time anti-cheat rules (docs/legality.md)
  reward::RewardOptions reward;        // lesson | tiered | kevin
  // Every group, as {"check": {...}, "timing": {...}, ...}.
  nlohmann::json to_json() const;
};

// ---------------------------------------------------------------------------------------------
// One submission: its text (a Python module or a raw model response; the last fenced block
// defining ModelNew is taken), or a file to read it from when `file` is set.
struct Submission {
  Task task;
  std::string response;
  std::filesystem::path file;  // read at evaluation; unreadable or oversized: format_error
};

// The verifier. Starts its warm pools on first use and keeps them (one Evaluator per process is
// the intended shape). Thread-safety: every method may be called from any thread; evaluations
// share the device through run slots. The destructor finishes submitted evaluations first.
class Evaluator {
 public:
  // Builds an evaluator and checks that the runner and toolchain work for the backend.
  // kInvalidArgument for bad options, kUnavailable when the toolchain is missing.
  static Result<std::unique_ptr<Evaluator>> create(Options options);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // Evaluates one submission on the calling thread.
  Verdict evaluate(const Task& task, std::string_view response);
  Verdict evaluate(const Submission& submission);

  // Evaluates all, concurrency.workers at a time; verdicts in submission order. `on_done(i, v)`
  // is called (serialised) as each finishes.
  std::vector<Verdict> evaluate_batch(const std::vector<Submission>& submissions,
                                      const std::function<void(std::size_t, const Verdict&)>& on_done = {});

  // Queues one evaluation and returns at once; concurrency.workers evaluations run at a time, in
  // submission order. `done` is called on a worker thread (keep it short, or hand the verdict off).
  void submit(Submission submission, std::function<void(Verdict)> done);
  std::future<Verdict> submit(Submission submission);
  // Blocks until every evaluation submitted so far has finished and its callback returned.
  void wait_idle();

  const Options& options() const;

 private:
  struct Impl;
  explicit Evaluator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace musacoder::mooreeval
