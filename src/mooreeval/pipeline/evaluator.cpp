#include "mooreeval/pipeline/evaluator.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <random>
#include <shared_mutex>
#include <thread>

#include "mooreeval/candidate/extract.h"
#include "core/files.h"
#include "core/text.h"
#include "mooreeval/pipeline/job_sandbox.h"
#include "mooreeval/pipeline/runtime_checks.h"
#include "mooreeval/runner/probe_cache.h"
#include "mooreeval/runner/protocol.h"
#include "mooreeval/runner/untrusted_job.h"
#include "mooreeval/verify/compare.h"
#include "mooreeval/verify/output_file.h"

namespace musacoder::eval {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::optional<TimingStats> timing_from(const json& result) {
  if (!result.contains("timing") || !result["timing"].is_object()) return std::nullopt;
  const json& t = result["timing"];
  TimingStats s;
  s.median_ms = t.value("median_ms", 0.0);
  s.p10_ms = t.value("p10_ms", 0.0);
  s.p90_ms = t.value("p90_ms", 0.0);
  s.min_ms = t.value("min_ms", 0.0);
  s.iters = t.value("iters", 0);
  return s;
}

VerdictClass class_from_runner_status(const std::string& status) {
  if (status == "format_error") return VerdictClass::kFormatError;
  if (status == "runtime_error") return VerdictClass::kRuntimeError;
  if (status == "wrong_answer") return VerdictClass::kWrongAnswer;
  if (status == "illegal") return VerdictClass::kIllegal;
  if (status == "timeout") return VerdictClass::kTimeout;
  if (status == "ok") return VerdictClass::kOk;
  return VerdictClass::kInfraError;
}

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

// The runner protocol's words (runner/protocol.h) as the JSON keys and control-pipe lines they are.
using run::Command;
using run::Gate;
using run::JobKey;
std::string key(JobKey k) { return std::string(run::job_key_name(k)); }
std::string gate(Gate g) { return std::string(run::gate_name(g)); }
std::string command(Command c) { return std::string(run::command_name(c)); }

std::string runner_log(const run::RunnerOutcome& o) {
  std::string s = o.process.stderr_text;
  if (!o.process.stdout_text.empty()) s = o.process.stdout_text + "\n" + s;
  if (o.result && o.result->contains("traceback")) s += "\n" + o.result->value("traceback", "");
  return s;
}

// What a candidate process's end means when it did not finish cleanly.
Verdict& classify_candidate_failure(Draft& d, const run::RunnerOutcome& o, Stage stage,
                                    double max_run_seconds) {
  d.log += runner_log(o);
  const bool candidate_code_ran = run::fault_of_phase(o.phase) == run::Fault::kCandidate;
  if (o.process.timed_out) {
    return d.fail(VerdictClass::kTimeout, stage,
                  "the candidate exceeded --max-run-seconds (" + std::to_string(max_run_seconds) + " s)");
  }
  if (o.result) {
    std::string status = o.result->value("status", "infra_error");
    std::string message = o.result->value("message", "");
    return d.fail(class_from_runner_status(status), stage, message);
  }
  if (candidate_code_ran) {
    return d.fail(VerdictClass::kRuntimeError, stage, "the candidate process died: " + o.process.describe());
  }
  return d.fail(VerdictClass::kInfraError, stage, "the runner died before the candidate ran: " + o.error);
}

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
  fs::path late_job;  // where it reads the part of its job that the build decides
};

// The runner's own per-step seconds ("seconds" in its result), under `side` in the verdict.
void note_runner_seconds(Verdict& v, const std::string& side, const run::RunnerOutcome& o) {
  if (json s = run::runner_seconds(o); !s.empty()) v.seconds.runners[side] = std::move(s);
}

// What the inspection is told besides its files: the target device (so that device queries answer
// as the run's device would), the run-time op allowlist (so that the static rule agrees with it) and
// the fallback-code policy. Part of the inspection cache key.
json inspect_settings(const EvalOptions& options) {
  return {{key(JobKey::kDeviceType), options.backend == build::Backend::kCpu ? "cpu" : "cuda"},
          {key(JobKey::kAllowedTorchOps), options.legality.allowed_torch_ops},
          {key(JobKey::kForbidFallbackCode), options.legality.forbid_fallback_code}};
}

// Runs the runner's inspect mode. Returns its result when the candidate was inspected
// (status "ok"); otherwise the verdict is decided (in `d`) and the result is empty.
std::optional<json> run_inspection(const EvalOptions& options, const UntrustedJob& job, Draft& d) {
  const double max_run_seconds = options.max_run.count() / 1000.0;
  auto t0 = Clock::now();
  json inspect_job = inspect_settings(options);
  inspect_job[key(JobKey::kCandidatePath)] = job.candidate_path.string();
  inspect_job[key(JobKey::kTaskPath)] = job.task_path.string();
  auto inspected = run::run_runner(
      job.runner,
      {"inspect", inspect_job, job.dir, options.max_run, {{"CUDA_VISIBLE_DEVICES", ""}}, job.wrapper});
  d.v.seconds.inspect = since(t0);
  if (inspected.ok()) note_runner_seconds(d.v, "inspect", *inspected);
  if (!inspected.ok()) {
    d.fail(VerdictClass::kInfraError, Stage::kInspect, inspected.status().message());
    return std::nullopt;
  }
  if (!inspected->result || inspected->result->value("status", "") != "ok") {
    run::RunnerOutcome o = std::move(inspected).value();
    o.phase = "candidate_inspect";  // any crash here happened in candidate code
    classify_candidate_failure(d, o, Stage::kInspect, max_run_seconds);
    return std::nullopt;
  }
  return std::move(inspected->result);
}

// The static legality rules on an inspection's result. Returns true when that decided the
// verdict (in `d`); otherwise fills `specs` for the build.
bool screen_inspection(const EvalOptions& options, const json& inspected, Draft& d,
                       std::vector<build::ExtensionSpec>& specs) {
  for (const auto& j : inspected.value("extensions", json::array())) {
    auto s = build::extension_spec_from_json(j);
    if (!s.ok()) {
      d.fail(VerdictClass::kInfraError, Stage::kInspect, s.status().message());
      return true;
    }
    specs.push_back(std::move(s).value());
  }
  d.v.legality = legality::findings_from_inspection(inspected.value("findings", json::array()));
  // A candidate with Python findings was not executed, so it recorded no extensions.
  if (d.v.legality.empty()) {
    for (auto& f : legality::check_extension_sources(specs, options.backend)) d.v.legality.push_back(f);
    for (auto& f : legality::check_source_text(specs)) d.v.legality.push_back(f);
    for (auto& f : legality::check_build_flags(specs)) d.v.legality.push_back(f);
  }
  if (d.v.legality.empty()) return false;
  d.fail(VerdictClass::kIllegal, Stage::kLegality, legality::describe(d.v.legality));
  return true;
}

// Inspects the candidate, or recalls the inspection of an identical submission. `place`
// leases the sandboxed runner, only on a miss. Returns the result, or nullopt when the
// verdict is decided (in `d`).
std::optional<json> inspect_candidate(const EvalOptions& options, const InspectCache& cache,
                                      std::string_view source, const fs::path& task_path,
                                      const fs::path& scratch,
                                      const std::function<Result<UntrustedJob>()>& place, Draft& d) {
  std::string key;
  if (cache.enabled()) {
    const auto t0 = Clock::now();
    if (auto task_text = read_file(task_path); task_text.ok()) {
      key = cache.key(source, *task_text + "\n" + inspect_settings(options).dump());
      if (auto hit = cache.lookup(key)) {
        d.v.seconds.inspect = since(t0);
        d.v.inspect_cached = true;
        return hit;
      }
    }
  }
  auto job = place();
  if (!job.ok()) {
    d.fail(VerdictClass::kInfraError, Stage::kInspect, job.status().message());
    return std::nullopt;
  }
  auto result = run_inspection(options, *job, d);
  if (result && !key.empty()) cache.remember(key, *result, scratch);
  return result;
}

}  // namespace

json EvalOptions::to_json() const {
  return {{"backend", build::backend_name(backend)},
          {"tolerance_rtol", rtol},
          {"tolerance_atol", atol},
          {"warmup_iters", warmup_iters},
          {"benchmark_iters", benchmark_iters},
          {"max_build_seconds", max_build.count() / 1000.0},
          {"max_run_seconds", max_run.count() / 1000.0},
          {"gpu_index", gpu_index},
          {"run_slots", run_slots},
          {"prestart_runners", prestart_runners},
          {"workers", workers},
          {"cuda_max_connections", cuda_max_connections},
          {"build_path", build::build_path_name(build_path)},
          {"build_workers", build_workers},
          {"warm_runners", warm_runners},
          {"resident_reference", resident_reference},
          {"cache_max_bytes", cache_max_bytes},
          {"flush_l2", flush_l2},
          {"stable_malloc", stable_malloc},
          {"reward_scheme", reward::scheme_name(reward.scheme)},
          {"reward_speedup_cap", reward.speedup_cap},
          {"runtime_op_check", legality.check_runtime_ops},
          {"runtime_behaviour_check", legality.check_runtime_behaviour},
          {"library_import_check", legality.check_library_imports},
          {"forbid_fallback_code", legality.forbid_fallback_code},
          {"min_own_kernel_share", legality.min_own_kernel_share},
          {"recheck_speedup_above", legality.recheck_speedup_above},
          {"max_library_bytes", legality.max_library_bytes},
          {"python", runner.python},
          {"cpu_threads", cpu_threads},
          {"poison_bytes", poison_bytes}};
}

Evaluator::Evaluator(EvalOptions options)
    : options_(std::move(options)),
      run_slots_(std::make_unique<std::counting_semaphore<>>(std::max(1, options_.run_slots))),
      candidate_permits_(std::make_unique<std::counting_semaphore<>>(candidate_runners())),
      build_slots_(std::make_unique<std::counting_semaphore<>>(
          options_.build_workers > 0 ? options_.build_workers
                                     : std::max(1, static_cast<int>(std::thread::hardware_concurrency())))) {
  seed_state_ =
      options_.seed ? *options_.seed : std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32);
  // Every runner process (zygotes, resident servers, cold runners) inherits runner.extra_env.
  if (options_.stable_malloc)
    options_.runner.extra_env.try_emplace(
        "GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1099511627776");
  if (options_.backend != build::Backend::kCpu && options_.cuda_max_connections > 0)
    options_.runner.extra_env.try_emplace("CUDA_DEVICE_MAX_CONNECTIONS",
                                          std::to_string(options_.cuda_max_connections));
}

int Evaluator::candidate_runners() const {
  const int ahead = options_.prestart_runners >= 0 ? options_.prestart_runners
                    : options_.backend == build::Backend::kCpu
                        ? 1
                        : std::clamp(options_.workers - options_.run_slots, 4, 16);
  return std::max(1, options_.run_slots) + ahead;
}

const InspectCache& Evaluator::inspect_cache() {
  std::call_once(inspect_cache_once_, [this] {
    inspect_cache_.emplace(build::BuildCache(options_.cache_dir, options_.cache_max_bytes),
                           fs::absolute(options_.runner.runner_dir));
  });
  return *inspect_cache_;
}

EvalSeeds Evaluator::draw_seeds(int trials) {
  if (options_.replay_seeds) return *options_.replay_seeds;
  EvalSeeds s;  // drawn in the order the runner protocol has always used: init, trials, checks, recheck
  s.init = next_seed();
  for (int i = 0; i < trials; ++i) s.trials.push_back(next_seed());
  for (int i = 0; i < 3; ++i) s.checks.push_back(next_seed());
  s.recheck = next_seed();
  return s;
}

uint64_t Evaluator::next_seed() {
  std::lock_guard<std::mutex> lock(mu_);
  // splitmix64: well-spread seeds from a counter.
  uint64_t z = (seed_state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (z ^ (z >> 31)) & 0x7FFFFFFFFFFFull;  // torch.manual_seed takes < 2**63
}

Result<json> Evaluator::probe_toolchain() {
  // The cpu backend's answer is remembered per interpreter/torch/runner fingerprint (probe_cache.h).
  std::string key;
  if (options_.backend == build::Backend::kCpu && !options_.cache_dir.empty()) {
    if (auto k = run::probe_fingerprint(options_.runner); k.ok()) key = *k;
    if (!key.empty())
      if (auto cached = run::load_probe(options_.cache_dir, key)) return *cached;
  }
  auto dir = TempDir::create("mooreeval-probe-", options_.work_root);
  if (!dir.ok()) return dir.status();
  run::RunnerCall call{"probe", json::object(), dir->path(), std::chrono::milliseconds(120000), {}};
  auto outcome = run::run_runner(options_.runner, call);
  if (!outcome.ok()) return outcome.status();
  if (!outcome->result || outcome->result->value("status", "") != "ok") {
    return internal_error("the runner's toolchain probe failed (" + outcome->error +
                          "): " + truncate_middle(outcome->process.stderr_text, 2000));
  }
  if (!key.empty()) run::store_probe(options_.cache_dir, key, *outcome->result);
  return *outcome->result;
}

Result<build::Toolchain> Evaluator::toolchain() {
  std::lock_guard<std::mutex> lock(mu_);
  if (toolchain_) return *toolchain_;
  auto probe = probe_toolchain();
  if (!probe.ok()) return probe.status();
  auto t = build::toolchain_from_probe(*probe);
  if (!t.ok()) return t.status();
  toolchain_ = *t;
  return *toolchain_;
}

const build::LeanShim* Evaluator::lean_shim(const build::Toolchain& toolchain) {
  std::lock_guard<std::mutex> lock(lean_mu_);
  if (lean_prepared_) return lean_shim_ ? &*lean_shim_ : nullptr;
  lean_prepared_ = true;
  if (options_.build_path == build::BuildPath::kFull) return nullptr;
  auto dir = build::locate_lean_dir(options_.lean_dir);
  if (!dir.ok()) {
    lean_note_ = dir.status().message();
    return nullptr;
  }
  const build::BuildCache cache(options_.cache_dir, options_.cache_max_bytes);
  if (!cache.enabled()) {
    auto scratch = TempDir::create("mooreeval-lean-", options_.work_root);
    if (!scratch.ok()) {
      lean_note_ = scratch.status().message();
      return nullptr;
    }
    lean_scratch_.emplace(std::move(scratch).value());
  }
  // Once per toolchain and cache: a full torch/extension.h compile, not charged to a candidate.
  auto shim = build::prepare_lean_shim(toolchain, options_.backend, *dir, cache,
                                       cache.enabled() ? cache.dir() : lean_scratch_->path(),
                                       std::max(options_.max_build, std::chrono::milliseconds(600000)));
  if (!shim.ok()) {
    lean_note_ = shim.status().message();
    std::fprintf(stderr, "mooreeval: lean build path unavailable, using full builds: %s\n",
                 lean_note_.c_str());
    return nullptr;
  }
  lean_shim_ = std::move(shim).value();
  return &*lean_shim_;
}

run::RunnerOptions Evaluator::runner_options() {
  run::RunnerOptions r = options_.runner;
  if (!options_.warm_runners) return r;
  std::lock_guard<std::mutex> lock(warm_mu_);
  if (warm_ && !warm_->healthy()) {
    std::fprintf(stderr, "mooreeval: the warm runner died; restarting it\n");
    warm_.reset();
  }
  // A few restarts at most: a zygote that keeps dying means cold starts from then on.
  if (!warm_ && warm_starts_ < 3) {
    ++warm_starts_;
    auto warm = run::WarmRunner::start(options_.runner, {options_.work_root, std::chrono::seconds(120), {}});
    if (warm.ok()) {
      warm_ = std::move(warm).value();
    } else {
      warm_note_ = warm.status().message();
      std::fprintf(stderr, "mooreeval: warm runner unavailable, starting runners cold: %s\n",
                   warm_note_.c_str());
    }
  }
  r.warm = warm_;
  return r;
}

SandboxedWarmPool* Evaluator::untrusted_pool(UntrustedRole role) {
  if (!options_.warm_runners) return nullptr;
  auto sb = sandbox();
  if (!sb.ok() || !(*sb)->active()) return nullptr;
  std::lock_guard<std::mutex> lock(pool_mu_);  // held while the members start: callers wait for them
  if (!pools_started_) {
    pools_started_ = true;
    auto t = toolchain();
    const build::LeanShim* shim = t.ok() ? lean_shim(*t) : nullptr;
    const fs::path runner_dir = fs::absolute(options_.runner.runner_dir);
    const bool cpu = options_.backend == build::Backend::kCpu;
    const int inspect_size = std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 4, 1, 4);
    auto start = [&](sandbox::JobKind kind, bool limit_as, int size, std::vector<fs::path> ro,
                     std::map<std::string, std::string> env) {
      WarmPoolOptions o;
      o.runner = options_.runner;
      for (auto& [k, v] : env) o.runner.extra_env[k] = v;
      o.sandbox = *sb;
      o.job = {kind, {}, std::move(ro), options_.gpu_index, limit_as};
      o.size = size;
      o.root = options_.work_root;
      auto pool = SandboxedWarmPool::start(o);
      if (pool->members() < size)
        std::fprintf(stderr,
                     "mooreeval: %d of %d sandboxed warm runners are up (%s); the other jobs start cold\n",
                     pool->members(), size, pool->note().c_str());
      return pool;
    };
    std::vector<fs::path> run_ro = {runner_dir};
    if (shim) run_ro.push_back(fs::absolute(shim->library));
    if (t.ok())
      for (const auto& p : compiler_prefixes(*t)) run_ro.push_back(p);
    const auto run_kind = run_job_kind();
    // Inspection imports the candidate without a GPU; on the cpu backend both roles need the
    // same sandbox, so one pool serves both.
    run_pool_ =
        start(run_kind, /*limit_as=*/true, candidate_runners() + (cpu ? inspect_size : 0), run_ro, {});
    // No GPU for inspection, and the zygote must know it: torch.utils.cpp_extension asks
    // torch.cuda.is_available() at import, which without device nodes falls back to the CUDA
    // runtime and marks forked children as bad forks — the zygote then would not preload it,
    // and every inspection imported it (setuptools included) itself, ~0.45 s on the H200 host.
    if (!cpu)
      inspect_pool_ = start(sandbox::JobKind::kRunCpu, /*limit_as=*/false, inspect_size, {runner_dir},
                            {{"CUDA_VISIBLE_DEVICES", ""}});
  }
  if (role == UntrustedRole::kInspect && inspect_pool_) return inspect_pool_.get();
  return run_pool_.get();
}

ResidentReferences* Evaluator::resident_references() {
  if (!options_.warm_runners || !options_.resident_reference) return nullptr;
  std::call_once(references_once_, [this] {
    ResidentReferenceOptions o;
    o.runner = options_.runner;
    o.device = device_string();
    o.size = std::max(1, options_.run_slots);
    o.root = options_.work_root;
    references_ = ResidentReferences::start(o);
    if (references_->members() < o.size)
      std::fprintf(stderr, "mooreeval: %d of %d resident reference runners are up (%s)%s\n",
                   references_->members(), o.size, references_->note().c_str(),
                   references_->members() ? "" : "; references start per evaluation");
  });
  return references_ && references_->members() > 0 ? references_.get() : nullptr;
}

Result<sandbox::Sandbox*> Evaluator::sandbox() {
  std::lock_guard<std::mutex> lock(sandbox_mu_);
  if (sandbox_error_) return *sandbox_error_;
  if (sandbox_) return sandbox_.get();
  sandbox::SandboxOptions o = options_.sandbox;
  o.python = options_.runner.python;
  auto created = sandbox::Sandbox::create(o);
  if (!created.ok()) {
    sandbox_error_ = created.status();
    return created.status();
  }
  sandbox_ = std::move(created).value();
  if (!sandbox_->active() && o.mode != sandbox::SandboxMode::kOff)
    std::cerr << "mooreeval: warning: " << sandbox_->reason() << "\n";
  else if (sandbox_->active() && !sandbox_->reason().empty())
    std::cerr << "mooreeval: sandbox on, degraded: " << sandbox_->reason() << "\n";
  return sandbox_.get();
}

Status Evaluator::prepare() {
  auto t = toolchain();
  if (!t.ok()) return t.status();
  if (options_.backend == build::Backend::kMusa) {
    // mcc from the MUSA SDK, torch_musa in the runner's Python, a device (see docs/musa.md).
    const std::string why = build::musa_unavailable_reason(*t, options_.musa_sdk_version,
                                                           options_.torch_musa_version, /*need_device=*/true);
    if (!why.empty()) return failed_precondition("MUSA toolchain not found: " + why);
  }
  if (options_.backend == build::Backend::kCuda) {
    if (t->nvcc.empty())
      return failed_precondition("CUDA toolkit not found: torch.utils.cpp_extension sees no nvcc");
    if (!t->cuda_available) return failed_precondition("the cuda backend needs a GPU, but torch sees none");
  }
  if (auto sb = sandbox(); !sb.ok()) return sb.status();
  if (options_.backend != build::Backend::kMusa) lean_shim(*t);  // now rather than during the first candidate
  {
    // The warm runners import torch (seconds each): the trusted one and, with a sandbox, the
    // sandboxed ones start side by side.
    std::jthread trusted([this] { runner_options(); });
    std::jthread references([this] { resident_references(); });
    untrusted_pool(UntrustedRole::kRun);
  }
  if (options_.build_path == build::BuildPath::kLean && !lean_shim(*t))
    return failed_precondition("--build-path lean, but the lean path is unavailable: " + lean_note_);
  return {};
}

std::string Evaluator::device_string() const {
  switch (options_.backend) {
    case build::Backend::kCpu:
      return "cpu";
    case build::Backend::kCuda:
      return "cuda:" + std::to_string(options_.gpu_index);
    case build::Backend::kMusa:
      return "musa:" + std::to_string(options_.gpu_index);
  }
  return "cpu";
}

sandbox::JobKind Evaluator::run_job_kind() const {
  switch (options_.backend) {
    case build::Backend::kCpu:
      return sandbox::JobKind::kRunCpu;
    case build::Backend::kCuda:
      return sandbox::JobKind::kRunCuda;
    case build::Backend::kMusa:
      return sandbox::JobKind::kRunMusa;
  }
  return sandbox::JobKind::kRunCpu;
}

Verdict Evaluator::evaluate(const task::TaskSpec& task, std::string_view submission) {
  Verdict v;
  int attempt = 0;
  do {
    v = evaluate_once(task, submission);
    v.attempts = ++attempt;
  } while (v.verdict == VerdictClass::kInfraError && attempt <= options_.infra_retries);
  return v;
}

Verdict Evaluator::new_verdict(const task::TaskSpec& task) const {
  Verdict v;
  v.task_id = task.id;
  v.backend = build::backend_name(options_.backend);
  v.reward_scheme = reward::scheme_name(options_.reward.scheme);
  v.config = options_.to_json();
  v.config["task_rtol"] = task.rtol.value_or(options_.rtol);
  v.config["task_atol"] = task.atol.value_or(options_.atol);
  v.trials = task.trials;
  return v;
}

void Evaluator::score(Verdict& v) const {
  const reward::RewardInputs in{v.compiled,
                                v.verdict == VerdictClass::kOk || v.verdict == VerdictClass::kWrongAnswer,
                                v.trials ? static_cast<double>(v.passed) / v.trials : 0.0, v.speedup,
                                v.verdict != VerdictClass::kIllegal};
  if (v.scored()) v.reward = reward::compute_reward(in, options_.reward);
}

Verdict Evaluator::reject_submission(const task::TaskSpec& task, const std::string& message) const {
  Verdict v = new_verdict(task);
  v.verdict = VerdictClass::kFormatError;
  v.stage = Stage::kExtract;
  v.message = message;
  score(v);
  return v;
}

Verdict Evaluator::screen(const task::TaskSpec& task, std::string_view submission) {
  const auto t_start = Clock::now();
  Draft d;
  d.v = new_verdict(task);
  auto finalize = [&](Verdict& v) -> Verdict {
    score(v);
    v.log = truncate_middle(sanitize_utf8(d.log), options_.max_log_bytes);
    v.seconds.total = since(t_start);
    return v;
  };
  auto submission_code = candidate::extract_candidate(submission, {options_.max_submission_bytes});
  if (!submission_code.ok())
    return finalize(d.fail(VerdictClass::kFormatError, Stage::kExtract, submission_code.status().message()));
  d.v.candidate_sha256 = submission_code->source_sha256;
  auto work = TempDir::create("mooreeval-screen-", options_.work_root);
  if (!work.ok()) return finalize(d.fail(VerdictClass::kInfraError, Stage::kPrepare, work.status().message()));
  const fs::path candidate_path = work->path() / "candidate.py";
  if (!write_file_atomic(candidate_path, submission_code->source).ok())
    return finalize(d.fail(VerdictClass::kInfraError, Stage::kPrepare, "cannot write the candidate file"));
  // Inspecting executes the candidate's module: in a sandbox (warm or cold) when there is one.
  auto sandbox = this->sandbox();
  if (!sandbox.ok())
    return finalize(d.fail(VerdictClass::kInfraError, Stage::kPrepare, sandbox.status().message()));
  auto job_sandbox = (*sandbox)->for_job();
  if (!job_sandbox.ok())
    return finalize(d.fail(VerdictClass::kInfraError, Stage::kPrepare, job_sandbox.status().message()));
  run::RunnerOptions runner = runner_options();
  // The trusted warm runner never forks candidate code when there is a sandbox.
  if (job_sandbox->active()) runner.warm.reset();
  const ProcessWrapper wrapper = job_sandbox->wrapper(
      {sandbox::JobKind::kRunCpu,
       work->path(),
       {fs::absolute(options_.runner.runner_dir), fs::absolute(task.path), candidate_path},
       0,
       /*limit_address_space=*/options_.backend == build::Backend::kCpu});
  auto inspected = inspect_candidate(
      options_, inspect_cache(), submission_code->source, fs::absolute(task.path), work->path(),
      [&] {
        return untrusted_job(untrusted_pool(UntrustedRole::kInspect), runner, work->path(), wrapper,
                             candidate_path, fs::absolute(task.path));
      },
      d);
  std::vector<build::ExtensionSpec> specs;
  if (!inspected || screen_inspection(options_, *inspected, d, specs)) return finalize(d.v);
  d.v.verdict = VerdictClass::kOk;
  d.v.stage = Stage::kLegality;
  d.v.message = "passed the static checks (not built, not run)";
  return finalize(d.v);
}

Verdict Evaluator::evaluate_once(const task::TaskSpec& task, std::string_view submission) {
  const auto t_start = Clock::now();
  Draft d;
  d.v = new_verdict(task);
  const verify::Tolerance tol{task.rtol.value_or(options_.rtol), task.atol.value_or(options_.atol)};
  const double max_run_seconds = options_.max_run.count() / 1000.0;

  auto finalize = [&](Verdict& v) -> Verdict {
    score(v);
    v.log = truncate_middle(sanitize_utf8(d.log), options_.max_log_bytes);
    v.seconds.total = since(t_start);
    return v;
  };

  // 1. Extract.
  auto t0 = Clock::now();
  auto submission_code = candidate::extract_candidate(submission, {options_.max_submission_bytes});
  d.v.seconds.extract = since(t0);
  if (!submission_code.ok())
    return finalize(d.fail(VerdictClass::kFormatError, Stage::kExtract, submission_code.status().message()));
  d.v.candidate_sha256 = submission_code->source_sha256;

  auto toolchain = this->toolchain();
  if (!toolchain.ok())
    return finalize(d.fail(VerdictClass::kInfraError, Stage::kPrepare, toolchain.status().message()));
  auto sandbox = this->sandbox();
  if (!sandbox.ok())
    return finalize(d.fail(VerdictClass::kInfraError, Stage::kPrepare, sandbox.status().message()));
  d.v.config["sandbox"] = (*sandbox)->settings();
  auto job_sandbox = (*sandbox)->for_job();  // one uid for every process of this evaluation
  if (!job_sandbox.ok())
    return finalize(d.fail(VerdictClass::kInfraError, Stage::kPrepare, job_sandbox.status().message()));
  const sandbox::JobSandbox& jail = *job_sandbox;
  auto work = TempDir::create("mooreeval-job-", options_.work_root);
  if (!work.ok()) return finalize(d.fail(VerdictClass::kInfraError, Stage::kPrepare, work.status().message()));
  if (options_.keep_work_dirs) work->keep();
  auto dirs = make_job_dirs(work->path());
  if (!dirs.ok()) return finalize(d.fail(VerdictClass::kInfraError, Stage::kPrepare, dirs.status().message()));
  const fs::path dir = dirs->root;
  const fs::path candidate_path = dir / "candidate.py";
  const fs::path task_path = fs::absolute(task.path);
  const fs::path runner_dir = fs::absolute(options_.runner.runner_dir);
  const auto run_kind = run_job_kind();
  if (!write_file_atomic(candidate_path, submission_code->source).ok())
    return finalize(d.fail(VerdictClass::kInfraError, Stage::kPrepare, "cannot write the candidate file"));

  // Fresh seeds per evaluation (or a verdict's, replayed); both sides get the same ones.
  const EvalSeeds seeds = draw_seeds(task.trials);
  const json trial_seeds = seeds.trials;
  const std::string device = device_string();
  json common = {{key(JobKey::kTaskPath), task_path.string()},
                 {key(JobKey::kDevice), device},
                 {key(JobKey::kTrialSeeds), trial_seeds},
                 {key(JobKey::kInitSeed), seeds.init},
                 {key(JobKey::kWarmupIters), options_.warmup_iters},
                 {key(JobKey::kBenchmarkIters), options_.benchmark_iters},
                 {key(JobKey::kFlushL2), options_.flush_l2},
                 {key(JobKey::kControlFd), 3},
                 {key(JobKey::kThreads), options_.cpu_threads},
                 // Consistency calls after the benchmark and the second timing method.
                 {key(JobKey::kCheckSeeds), seeds.checks},
                 {key(JobKey::kRecheckSeed), seeds.recheck},
                 {key(JobKey::kRecheckMaxBytes), options_.legality.recheck_max_bytes}};
  // The seeds and the timing method, in every verdict: enough to re-run this evaluation.
  d.v.config["seeds"] = {{"init", seeds.init},
                         {"trials", trial_seeds},
                         {"checks", seeds.checks},
                         {"recheck", seeds.recheck}};
  d.v.config["timing_method"] =
      options_.backend == build::Backend::kCpu
          ? "median of per-call wall-clock times (perf_counter) after warm-up calls"
          : std::string("median of per-call device times (events around each call on the current stream, "
                        "host not waiting between calls, device-wide synchronize after the last)") +
                (options_.flush_l2 ? ", L2 flushed before each call" : "");

  // The reference: in a resident server once the run slot is ours (its device is set up
  // already), or else a process of its own that starts now, imports torch while we build,
  // and waits at its gate.
  json ref_job = common;
  ref_job[key(JobKey::kOutputsPath)] = run::outputs_file(dirs->reference, run::Side::kReference).string();
  ref_job[key(JobKey::kChecksPath)] = run::checks_file(dirs->reference, run::Side::kReference).string();
  ref_job[key(JobKey::kTimingPath)] = run::timing_file(dirs->reference, run::Side::kReference).string();
  ref_job[key(JobKey::kRecheckPath)] = run::recheck_file(dirs->reference, run::Side::kReference).string();
  const run::RunnerOptions runner = runner_options();
  // The trusted warm runner forks its jobs outside any sandbox: with the sandbox on, only
  // the reference (task code) runs there; candidate code runs in a sandboxed warm runner
  // (untrusted_pool) or starts cold in its own sandbox.
  run::RunnerOptions cold = runner;
  if (jail.active()) cold.warm.reset();
  ResidentReferences* residents = resident_references();
  auto start_reference =
      [&](const run::RunnerOptions& r,
          std::chrono::milliseconds deadline) -> Result<std::unique_ptr<run::RunnerSession>> {
    const bool unwrapped = r.warm != nullptr;  // trusted warm jobs run on the host
    return run::RunnerSession::start(
        r,
        {"reference",
         ref_job,
         dirs->reference,
         deadline,
         {},
         unwrapped ? ProcessWrapper{}
                   : jail.wrapper({run_kind, dirs->reference, {runner_dir, task_path}, options_.gpu_index})});
  };
  std::optional<ResidentReferences::Lease> ref_lease;  // outlives the reference's session
  std::unique_ptr<run::RunnerSession> reference;
  if (!residents) {
    auto started = start_reference(runner, kBeforeRunSlot);
    if (!started.ok()) return finalize(d.fail(VerdictClass::kInfraError, Stage::kRun, started.status().message()));
    reference = std::move(started).value();
  }

  // The candidate runner starts as early as a permit allows: it imports the task and sets
  // up the device and the harness while we inspect and build, then waits at its gate
  // (nothing of the candidate's runs before "run"). What only the build knows comes later,
  // in its late job file. A cold job in a sandbox sees only the paths bound when it starts,
  // so that one starts after the build, with its libraries.
  auto start_candidate = [&](Permit permit, std::vector<fs::path> read_only,
                             bool early) -> Result<std::optional<CandidateRun>> {
    read_only.insert(read_only.begin(), {runner_dir, task_path, candidate_path});
    for (const auto& p : compiler_prefixes(*toolchain)) read_only.push_back(p);
    auto place = untrusted_job(untrusted_pool(UntrustedRole::kRun), cold, dirs->candidate,
                               jail.wrapper({run_kind, dirs->candidate, read_only, options_.gpu_index}),
                               candidate_path, task_path);
    if (!place.ok()) return place.status();
    if (early && !place->lease && jail.active()) return std::optional<CandidateRun>{};
    const fs::path dir = place->dir;
    json job = common;
    job[key(JobKey::kTaskPath)] = place->task_path.string();
    job[key(JobKey::kCandidatePath)] = place->candidate_path.string();
    job[key(JobKey::kOutputsPath)] = run::outputs_file(dir, run::Side::kCandidate).string();
    job[key(JobKey::kChecksPath)] = run::checks_file(dir, run::Side::kCandidate).string();
    job[key(JobKey::kTimingPath)] = run::timing_file(dir, run::Side::kCandidate).string();
    job[key(JobKey::kRecheckPath)] = run::recheck_file(dir, run::Side::kCandidate).string();
    job[key(JobKey::kPoisonBytes)] = options_.poison_bytes;
    job[key(JobKey::kMinOwnKernelShare)] = options_.legality.min_own_kernel_share;
    job[key(JobKey::kPoisonHost)] = true;
    const fs::path late = place->lease ? place->lease->staged_path(std::string(run::kLateJobName)) : dir / run::kLateJobName;
    job[key(JobKey::kLateJobPath)] = late.string();
    auto session =
        run::RunnerSession::start(place->runner, {"candidate", job, dir, kBeforeRunSlot, {}, place->wrapper});
    if (!session.ok()) return session.status();
    return std::optional<CandidateRun>(
        CandidateRun{std::move(permit), std::move(place).value(), std::move(session).value(), late});
  };
  std::optional<CandidateRun> cand_run;
  if (auto permit = Permit::try_take(*candidate_permits_)) {
    auto early = start_candidate(std::move(*permit), {}, /*early=*/true);
    if (!early.ok()) return finalize(d.fail(VerdictClass::kInfraError, Stage::kRun, early.status().message()));
    if (*early) cand_run.emplace(std::move(**early));
  }

  // 2-3. Inspect (parse, static findings, load_inline specs) and static legality.
  std::vector<build::ExtensionSpec> specs;
  json fallback_blocks = json::array();  // forward's blocks with PyTorch compute: the run must not enter them
  const ProcessWrapper inspect_wrapper =
      jail.wrapper({sandbox::JobKind::kRunCpu,
                    dirs->inspect,
                    {runner_dir, task_path, candidate_path},
                    0,
                    /*limit_address_space=*/options_.backend == build::Backend::kCpu});
  {
    auto inspected = inspect_candidate(
        options_, inspect_cache(), submission_code->source, task_path, dirs->inspect,
        [&] {
          return untrusted_job(untrusted_pool(UntrustedRole::kInspect), cold, dirs->inspect, inspect_wrapper,
                               candidate_path, task_path);
        },
        d);  // a warm member is free again for the next inspection
    if (!inspected || screen_inspection(options_, *inspected, d, specs)) return finalize(d.v);
    fallback_blocks = inspected->value("fallback_blocks", json::array());
    for (const auto& note : inspected->value("notes", json::array()))
      if (note.is_string()) d.log += "inspect: " + note.get<std::string>() + "\n";
  }

  // 4. Build.
  build::BuildOptions bopts;
  bopts.backend = options_.backend;
  bopts.max_build_time = options_.max_build;
  bopts.cache_dir = options_.cache_dir;
  bopts.cache_max_bytes = options_.cache_max_bytes;
  bopts.max_log_bytes = options_.max_log_bytes;
  bopts.path = options_.build_path;
  bopts.lean_shim = lean_shim(*toolchain);
  const build::LeanShim* shim = bopts.lean_shim;
  if (jail.active()) {
    // Compilers see the toolchain (and the lean shim) and their own build dir, nothing else.
    std::vector<fs::path> ro = toolchain_read_only(*toolchain);
    if (shim) ro.insert(ro.end(), {shim->include_dir, shim->shadow_dir, shim->library});
    bopts.sandbox = [&jail, ro](ProcessOptions p) {
      sandbox::SandboxJob job{sandbox::JobKind::kBuild, fs::path(p.cwd), ro, 0};
      return jail.wrap(std::move(p), job);
    };
  }
  build::BuildReport built;
  {
    // A build slot bounds concurrent compiles to the cores, whatever the number of workers.
    const auto t_build_wait = Clock::now();
    const Permit build_slot = Permit::take(*build_slots_);
    d.v.seconds.build_wait = since(t_build_wait);
    built = build::build_extensions(specs, *toolchain, bopts, dir);
  }
  d.v.seconds.build = built.seconds;
  d.v.seconds.build_steps = built.step_seconds;
  d.v.cache_hit = built.cache_hit;
  d.v.build_path = built.path;
  d.log += built.lean_note + built.log;
  switch (built.outcome) {
    case build::BuildOutcome::kOk:
      break;
    case build::BuildOutcome::kCompileError:
      return finalize(d.fail(VerdictClass::kCompileError, Stage::kBuild, "the extension failed to compile"));
    case build::BuildOutcome::kTimeout:
      return finalize(d.fail(VerdictClass::kTimeout, Stage::kBuild,
                             "the build exceeded --max-build-seconds (" +
                                 std::to_string(options_.max_build.count() / 1000.0) + " s)"));
    case build::BuildOutcome::kInfraError:
      return finalize(d.fail(VerdictClass::kInfraError, Stage::kBuild, "the build could not run: " + built.log));
  }
  d.v.compiled = true;
  for (const auto& e : built.extensions) {
    for (auto& f : legality::check_library_size(e.library, options_.legality)) d.v.legality.push_back(f);
    // What the library imports decides what it may call (also compute below the Python dispatcher).
    if (d.v.legality.empty())
      for (auto& f : legality::check_library_imports(e.library, options_.legality, task.allow_libraries))
        d.v.legality.push_back(f);
  }
  if (!d.v.legality.empty())
    return finalize(d.fail(VerdictClass::kIllegal, Stage::kLegality, legality::describe(d.v.legality)));

  // 5. Run reference and candidate in the run slot.
  if (!cand_run) {
    std::vector<fs::path> libraries;
    for (const auto& e : built.extensions) {
      libraries.push_back(fs::absolute(e.library));
      if (e.lean && shim) libraries.push_back(fs::absolute(shim->library));
    }
    auto started = start_candidate(Permit::take(*candidate_permits_), std::move(libraries), /*early=*/false);
    if (!started.ok()) return finalize(d.fail(VerdictClass::kInfraError, Stage::kRun, started.status().message()));
    if (!*started)
      return finalize(d.fail(VerdictClass::kInfraError, Stage::kRun, "the candidate runner did not start"));
    cand_run.emplace(std::move(**started));
  }
  const UntrustedJob& place = cand_run->place;
  const fs::path cand_dir = place.dir;
  d.v.config["candidate_runner"] = place.lease ? "warm (sandboxed)" : (cold.warm ? "warm" : "cold");
  {
    json late = {{key(JobKey::kKernelNames), legality::kernel_names(specs)},
                 {key(JobKey::kExtensions), json::array()},
                 {key(JobKey::kFallbackBlocks), fallback_blocks}};
    for (std::size_t i = 0; i < built.extensions.size(); ++i) {
      const auto& e = built.extensions[i];
      // A warm member sees only its own job dir (the lean shim: bound at its start).
      auto library =
          place.provide(e.library, "ext" + std::to_string(i) + "-" + e.library.filename().string());
      if (!library.ok())
        return finalize(d.fail(VerdictClass::kInfraError, Stage::kRun, library.status().message()));
      json entry = {{"name", e.name}, {"path", library->string()}};
      if (e.lean && shim) entry["lean_shim"] = shim->library.string();
      late[key(JobKey::kExtensions)].push_back(entry);
    }
    const fs::path written = dirs->candidate / run::kLateJobName;
    if (!write_file_atomic(written, late.dump()).ok())
      return finalize(d.fail(VerdictClass::kInfraError, Stage::kRun, "cannot write the candidate's late job file"));
    auto provided = place.provide(written, std::string(run::kLateJobName));
    if (!provided.ok() || *provided != cand_run->late_job)
      return finalize(
          d.fail(VerdictClass::kInfraError, Stage::kRun, "cannot hand the late job file to the candidate"));
  }
  const auto t_wait = Clock::now();
  std::optional<Permit> run_slot;
  run_slot.emplace(Permit::take(*run_slots_));
  d.v.seconds.run_wait = since(t_wait);
  t0 = Clock::now();
  auto slot_lap = [&d, last = t0](const char* step) mutable {
    const auto now = Clock::now();
    d.v.seconds.slot[step] += std::chrono::duration<double>(now - last).count();
    last = now;
  };
  // The device is shared with the other slots' untimed work until the benchmark, which has
  // it alone (timing_lock.h).
  std::shared_lock<TimingLock> untimed(timing_lock_);
  slot_lap("device_wait");
  // Deadlines count from the slot: the reference runs, benchmarks and may re-measure.
  const auto ref_deadline = 3 * options_.max_run + std::chrono::milliseconds(60000);
  if (!reference) {
    if (auto lease = residents->acquire()) ref_lease.emplace(std::move(*lease));
    // No resident server left: a process of its own, as without them.
    d.v.config["reference_runner"] = ref_lease ? "resident" : runner.warm ? "warm" : "cold";
    auto started = start_reference(ref_lease ? ref_lease->runner_options() : runner, ref_deadline);
    if (!started.ok()) {
      cand_run->session->set_deadline(std::chrono::milliseconds(0));
      cand_run->session->finish();
      return finalize(d.fail(VerdictClass::kInfraError, Stage::kRun, started.status().message()));
    }
    reference = std::move(started).value();
  } else {
    d.v.config["reference_runner"] = runner.warm ? "warm" : "cold";
  }
  slot_lap("reference_acquire");
  run::RunnerSession& ref = *reference;
  run::RunnerSession& cand = *cand_run->session;
  ref.set_deadline(ref_deadline);
  cand.set_deadline(options_.max_run);
  if (!ref.wait_for(gate(Gate::kLoaded))) {
    auto o = ref.finish();
    d.log += runner_log(o);
    return finalize(
        d.fail(VerdictClass::kInfraError, Stage::kRun, "the reference runner failed to start: " + o.error));
  }
  slot_lap("reference_ready");
  // Both sides' trials run at once (neither is timed; only we see both outputs): the slot
  // holds the longer of the two, not their sum.
  ref.command(command(Command::kRun));
  cand.command(command(Command::kRun));
  if (!ref.wait_for(gate(Gate::kOutputsReady))) {
    auto o = ref.finish();
    d.log += runner_log(o);
    cand.set_deadline(std::chrono::milliseconds(0));  // its trials are of no use now
    cand.finish();
    std::string why = o.result ? o.result->value("message", "") : o.error;
    return finalize(d.fail(VerdictClass::kInfraError, Stage::kRun, "the reference failed: " + why));
  }
  // The harness's own work on the trials (device-to-host copies and output files: 14 GB per side for
  // a 1 GB output) is the same on both sides: the candidate's deadline does not charge it for the
  // time the reference needed for it. --max-run-seconds is what it may take beyond that.
  cand.set_deadline(options_.max_run);
  if (!cand.wait_for(gate(Gate::kOutputsReady))) {
    ref.finish();
    auto o = cand.finish();
    d.v.seconds.run = since(t0);
    return finalize(classify_candidate_failure(d, o, Stage::kRun, max_run_seconds));
  }
  d.v.seconds.run = since(t0);
  untimed.unlock();
  slot_lap("outputs");

  // 6. Numeric check.
  auto ref_out = verify::read_output_file(run::outputs_file(dirs->reference, run::Side::kReference));
  auto cand_out = verify::read_output_file(run::outputs_file(cand_dir, run::Side::kCandidate));
  if (!ref_out.ok() || !cand_out.ok()) {
    ref.finish();
    cand.finish();
    return finalize(
        d.fail(VerdictClass::kInfraError, Stage::kVerify,
               "unreadable outputs: " + (!ref_out.ok() ? ref_out.status() : cand_out.status()).message()));
  }
  auto numeric = verify::compare_outputs(*ref_out, *cand_out, tol);
  d.v.passed = numeric.passed;
  d.v.max_abs_error = numeric.max_abs_error;
  d.v.max_rel_error = numeric.max_rel_error;
  const bool all_pass = numeric.passed == numeric.trials && numeric.trials > 0;
  slot_lap("verify");

  // 7. Benchmark, only at 100% pass; reference first, then candidate, never overlapping.
  // Each side announces "timed" after its benchmark (the candidate also after its
  // consistency calls) and waits, so both can re-measure if the speedup looks too good.
  t0 = Clock::now();
  std::unique_lock<TimingLock> timed(timing_lock_, std::defer_lock);
  if (all_pass) {
    timed.lock();
    slot_lap("timing_wait");
  }
  std::optional<double> ref_median, cand_median;
  ref.command(command(all_pass ? Command::kBench : Command::kExit));
  if (all_pass) {
    if (!ref.wait_for(gate(Gate::kTimed)) ||
        !(ref_median = read_timing_median(run::timing_file(dirs->reference, run::Side::kReference)))) {
      auto o = ref.finish();
      cand.finish();
      d.log += runner_log(o);
      return finalize(d.fail(VerdictClass::kInfraError, Stage::kBenchmark, "the reference benchmark failed"));
    }
  }
  cand.command(command(all_pass ? Command::kBench : Command::kExit));
  if (all_pass && cand.wait_for(gate(Gate::kTimed)))
    cand_median = read_timing_median(run::timing_file(cand_dir, run::Side::kCandidate));
  const double threshold = options_.legality.recheck_speedup_above;
  if (ref_median && cand_median && *cand_median > 0 && threshold > 0 &&
      *ref_median / *cand_median > threshold) {
    // Too good to take on one method's word: both sides again, wall clock over distinct inputs.
    ref.command(command(Command::kRemeasure));
    std::optional<double> ref_mean, cand_mean;
    if (ref.wait_for(gate(Gate::kTimed))) ref_mean = read_recheck_mean(run::recheck_file(dirs->reference, run::Side::kReference));
    cand.command(command(Command::kRemeasure));
    if (cand.wait_for(gate(Gate::kTimed))) cand_mean = read_recheck_mean(run::recheck_file(cand_dir, run::Side::kCandidate));
    if (ref_mean && cand_mean && *cand_mean > 0) {
      d.v.speedup_check =
          SpeedupCheck{threshold,  *ref_median / *cand_median, *ref_mean / *cand_mean, *ref_mean,
                       *cand_mean, "wall_clock_batch"};
    }
  }
  // The candidate's process ends inside the slot (nothing of it may still run on the device
  // when the next job times); the reference's exit (trusted code, its device work done)
  // overlaps the next job.
  if (timed) timed.unlock();
  slot_lap("bench");
  auto cand_done = cand.finish();
  run_slot.reset();
  slot_lap("exit");
  auto ref_done = ref.finish();
  note_runner_seconds(d.v, "reference", ref_done);
  note_runner_seconds(d.v, "candidate", cand_done);
  d.v.seconds.benchmark = since(t0);
  if (all_pass) {
    if (!ref_done.result || ref_done.result->value("status", "") != "ok") {
      d.log += runner_log(ref_done);
      return finalize(d.fail(VerdictClass::kInfraError, Stage::kBenchmark, "the reference benchmark failed"));
    }
    d.v.reference_time = timing_from(*ref_done.result);
  }
  if (!cand_done.result || cand_done.result->value("status", "") != "ok")
    return finalize(
        classify_candidate_failure(d, cand_done, all_pass ? Stage::kBenchmark : Stage::kRun, max_run_seconds));

  // 8. Legality, dynamic part: dispatched aten ops, run-time findings, consistency calls.
  const json& cand_result = *cand_done.result;
  std::map<std::string, int> ops;
  if (cand_result.contains("torch_ops") && cand_result["torch_ops"].is_object())
    for (const auto& [op, n] : cand_result["torch_ops"].items()) ops[op] = n.template get<int>();
  d.v.legality = legality::check_dispatched_ops(ops, options_.legality);
  const bool ref_mutates = ref_done.result && ref_done.result->value("inputs_mutated", false);
  for (auto& f : legality::findings_from_run(cand_result.value("findings", json::array()), ref_mutates,
                                             options_.legality))
    d.v.legality.push_back(f);
  if (all_pass && options_.legality.check_runtime_behaviour) {
    auto ref_checks = verify::read_output_file(run::checks_file(dirs->reference, run::Side::kReference));
    auto cand_checks = verify::read_output_file(run::checks_file(cand_dir, run::Side::kCandidate));
    if (!ref_checks.ok())
      return finalize(d.fail(VerdictClass::kInfraError, Stage::kVerify,
                             "unreadable reference check outputs: " + ref_checks.status().message()));
    if (!cand_checks.ok()) {
      d.v.legality.push_back({"inconsistent_result",
                              "the candidate wrote no consistency outputs: " + cand_checks.status().message(),
                              0});
    } else {
      for (auto& f : consistency_findings(cand_result.value("checks", json::array()), *ref_out, *ref_checks,
                                          *cand_checks, tol))
        d.v.legality.push_back(f);
    }
  }
  if (cand_result.contains("kernel_profile"))
    d.log += "\nkernel profile: " + cand_result["kernel_profile"].dump().substr(0, 4000);
  if (!d.v.legality.empty()) {
    d.v.reference_time.reset();
    d.v.speedup_check.reset();
    return finalize(d.fail(VerdictClass::kIllegal, Stage::kLegality, legality::describe(d.v.legality)));
  }

  if (!all_pass) return finalize(d.fail(VerdictClass::kWrongAnswer, Stage::kVerify, numeric.first_failure));
  d.v.candidate_time = timing_from(cand_result);
  if (d.v.reference_time && d.v.candidate_time && d.v.candidate_time->median_ms > 0)
    d.v.speedup = d.v.reference_time->median_ms / d.v.candidate_time->median_ms;
  if (d.v.speedup && d.v.speedup_check)
    d.v.speedup = std::min(*d.v.speedup, d.v.speedup_check->recheck_speedup);
  d.v.verdict = VerdictClass::kOk;
  d.v.stage = Stage::kBenchmark;
  d.v.message = "all " + std::to_string(numeric.trials) + " trials within tolerance";
  if (d.v.speedup_check)
    d.v.message += "; speedup re-measured (" + std::to_string(d.v.speedup_check->event_speedup) +
                   "x by events, " + std::to_string(d.v.speedup_check->recheck_speedup) +
                   "x by wall clock), the smaller kept";
  if (d.v.speedup_check && d.v.speedup_check->disagreement())
    d.v.message += "; the two timing methods disagree by more than " +
                   std::to_string(SpeedupCheck::kTimingDisagreement) + "x: this speedup is not reliable";
  return finalize(d.v);
}

}  // namespace musacoder::eval
