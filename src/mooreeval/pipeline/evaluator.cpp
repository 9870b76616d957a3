#include "mooreeval/pipeline/evaluator.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <random>
#include <thread>

#include "core/files.h"
#include "core/splitmix.h"
#include "core/text.h"
#include "mooreeval/pipeline/eval_job.h"
#include "mooreeval/pipeline/job_sandbox.h"
#include "mooreeval/runner/probe_cache.h"
#include "mooreeval/runner/untrusted_job.h"

namespace musacoder::eval {

namespace fs = std::filesystem;
using nlohmann::json;

int timing_rounds_of(const EvalOptions& o) {
  if (o.timing_rounds > 0) return o.timing_rounds;
  return o.backend == build::Backend::kCpu ? 5 : 1;
}

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
          {"host_head_start", host_head_start},
          {"timing_rounds", timing_rounds_of(*this)},
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
  // well-spread seeds from a counter
  return splitmix64_next(seed_state_) & 0x7FFFFFFFFFFFull;  // torch.manual_seed takes < 2**63
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

Verdict Evaluator::evaluate_once(const task::TaskSpec& task, std::string_view submission) {
  // One EvalJob per evaluation (eval_job.h); each stage either decides the verdict or lets the
  // next one go on. Everything the job holds is released when it goes out of scope.
  EvalJob job(*this, task);
  // 1. Extract the candidate; its sandbox uid, work dir, seeds and runner jobs.
  if (auto v = job.prepare(submission)) return std::move(*v);
  // The reference and candidate runners start now and import torch while we inspect and build;
  // static_only builds and runs nothing, so starts neither.
  if (!options_.static_only)
    if (auto v = job.start_runners()) return std::move(*v);
  // 2-3. Inspect (parse, static findings, load_inline specs) and the static legality rules.
  if (auto v = job.inspect()) return std::move(*v);
  if (options_.static_only) return job.passed_static_checks();
  // 4. Build, and the legality rules on the built libraries.
  if (auto v = job.compile()) return std::move(*v);
  // 5-6. Both sides' trials in the run slot; the numeric check.
  if (auto v = job.trials()) return std::move(*v);
  // 7. Benchmark, only at 100% pass (and the speedup re-check); both runners end.
  if (auto v = job.benchmark()) return std::move(*v);
  // 8. Legality, dynamic part (dispatched ops, run-time findings, consistency calls); the verdict.
  return job.judge();
}

}  // namespace musacoder::eval
