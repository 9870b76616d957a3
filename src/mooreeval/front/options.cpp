// Grouped options: to_json per group, and the mapping onto eval::EvalOptions.
#include "mooreeval/front/options_map.h"

#include <cstdlib>

#include "mooreeval/compile/extension_build.h"
#include "mooreeval/compile/toolchain.h"

namespace musacoder::mooreeval {

using nlohmann::json;

json CheckOptions::to_json() const {
  return {{"tolerance_rtol", rtol},
          {"tolerance_atol", atol},
          {"seed", seed ? json(*seed) : json(nullptr)},
          {"poison_bytes", poison_bytes},
          {"max_submission_bytes", max_submission_bytes},
          {"static_only", static_only}};
}

json TimingOptions::to_json() const {
  return {{"warmup_iters", warmup_iters},
          {"benchmark_iters", benchmark_iters},
          {"flush_l2", flush_l2},
          {"host_head_start", host_head_start},
          {"rounds", rounds},
          {"stable_malloc", stable_malloc}};
}

json DeadlineOptions::to_json() const {
  return {{"max_build_seconds", max_build.count() / 1000.0}, {"max_run_seconds", max_run.count() / 1000.0},
          {"infra_retries", infra_retries}};
}

json ConcurrencyOptions::to_json() const {
  return {{"workers", workers}, {"run_slots", run_slots}, {"gpu_index", gpu_index},
          {"prestart_runners", prestart_runners}, {"build_workers", build_workers}};
}

json CompileOptions::to_json() const {
  return {{"backend", backend}, {"build_path", build_path}, {"lean_dir", lean_dir},
          {"cache_dir", cache_dir.string()}, {"cache_max_bytes", cache_max_bytes},
          {"musa_sdk_version", musa_sdk_version}, {"torch_musa_version", torch_musa_version}};
}

json RunnerOptions::to_json() const {
  return {{"python", python}, {"runner_dir", runner_dir.string()}, {"extra_env", extra_env},
          {"warm_runners", warm_runners}, {"resident_reference", resident_reference},
          {"cpu_threads", cpu_threads}, {"cuda_max_connections", cuda_max_connections},
          {"max_log_bytes", max_log_bytes}, {"work_root", work_root.string()}, {"keep_work_dirs", keep_work_dirs}};
}

json Options::to_json() const {
  return {{"check", check.to_json()},
          {"timing", timing.to_json()},
          {"deadlines", deadlines.to_json()},
          {"concurrency", concurrency.to_json()},
          {"compile", compile.to_json()},
          {"runner", runner.to_json()},
          {"sandbox", {{"mode", sandbox::sandbox_mode_name(sandbox.mode)}}},
          {"legality",
           {{"runtime_op_check", legality.check_runtime_ops},
            {"runtime_behaviour_check", legality.check_runtime_behaviour},
            {"library_import_check", legality.check_library_imports},
            {"forbid_fallback_code", legality.forbid_fallback_code},
            {"min_own_kernel_share", legality.min_own_kernel_share},
            {"recheck_speedup_above", legality.recheck_speedup_above},
            {"max_library_bytes", legality.max_library_bytes}}},
          {"reward",
           {{"scheme", reward::scheme_name(reward.scheme)},
            {"speedup_cap", reward.speedup_cap},
            {"tiered_lambda", reward.tiered_lambda},
            {"tiered_nu_max", reward.tiered_nu_max}}}};
}

namespace {

void map_check_timing_deadlines(const Options& in, eval::EvalOptions& o) {
  o.rtol = in.check.rtol;
  o.atol = in.check.atol;
  o.seed = in.check.seed;
  o.poison_bytes = in.check.poison_bytes;
  o.max_submission_bytes = in.check.max_submission_bytes;
  o.static_only = in.check.static_only;
  o.warmup_iters = in.timing.warmup_iters;
  o.benchmark_iters = in.timing.benchmark_iters;
  o.flush_l2 = in.timing.flush_l2;
  o.host_head_start = in.timing.host_head_start;
  o.timing_rounds = in.timing.rounds;
  o.stable_malloc = in.timing.stable_malloc;
  o.max_build = in.deadlines.max_build;
  o.max_run = in.deadlines.max_run;
  o.infra_retries = in.deadlines.infra_retries;
}

void map_concurrency_runner(const Options& in, eval::EvalOptions& o) {
  o.workers = in.concurrency.workers;
  o.run_slots = in.concurrency.run_slots;
  o.gpu_index = in.concurrency.gpu_index;
  o.prestart_runners = in.concurrency.prestart_runners;
  o.build_workers = in.concurrency.build_workers;
  o.runner.python = in.runner.python;
  o.runner.runner_dir = in.runner.runner_dir;
  o.runner.extra_env = in.runner.extra_env;
  o.warm_runners = in.runner.warm_runners;
  o.resident_reference = in.runner.resident_reference;
  o.cpu_threads = in.runner.cpu_threads;
  o.cuda_max_connections = in.runner.cuda_max_connections;
  o.max_log_bytes = in.runner.max_log_bytes;
  o.work_root = in.runner.work_root;
  o.keep_work_dirs = in.runner.keep_work_dirs;
}

}  // namespace

Result<eval::EvalOptions> to_eval_options(const Options& in) {
  eval::EvalOptions o;
  auto backend = build::parse_backend(in.compile.backend);
  if (!backend.ok()) return backend.status();
  auto path = build::parse_build_path(in.compile.build_path);
  if (!path.ok()) return path.status();
  o.backend = *backend;
  o.build_path = *path;
  o.lean_dir = in.compile.lean_dir;
  o.cache_dir = in.compile.cache_dir;
  o.cache_max_bytes = in.compile.cache_max_bytes;
  o.musa_sdk_version = in.compile.musa_sdk_version;
  o.torch_musa_version = in.compile.torch_musa_version;
  map_check_timing_deadlines(in, o);
  map_concurrency_runner(in, o);
  o.sandbox = in.sandbox;
  o.legality = in.legality;
  o.reward = in.reward;
  return o;
}

std::filesystem::path default_cache_dir() {
  namespace fs = std::filesystem;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "mooreeval/builds";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache/mooreeval/builds";
  return {};
}

}  // namespace musacoder::mooreeval
