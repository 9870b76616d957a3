// mooreeval: the MooreEval verifier's command line.
//   mooreeval eval --task T --candidate C [--backend cpu|cuda] [--json]
//   mooreeval eval-batch --tasks DIR --samples DIR --workers N [--out results.jsonl]
//   mooreeval launch [--workers 64 --backend musa ... every flag of the lesson's launcher]
//   mooreeval serve [launch flags] --listen HOST:PORT --db PATH [--queue redis://HOST:PORT]
//   mooreeval launch --listen HOST:PORT ...   (the same service)
//   mooreeval worker --queue redis://HOST:PORT [--workers N] [evaluation flags]
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "core/run_dir.h"
#include "mooreeval/mooreeval.h"

#include "commands.h"
#include "service_commands.h"

#ifndef MOOREEVAL_SOURCE_DIR
#define MOOREEVAL_SOURCE_DIR "."
#endif

namespace {

using musacoder::eval::EvalOptions;
namespace fs = std::filesystem;

struct CommonFlags {
  std::string backend = "cpu", reward_scheme = "lesson", python = "python3", runner_dir, cache_dir, work_dir;
  std::string build_path = "auto";
  double max_build_seconds = 60, max_run_seconds = 30, cache_max_gb = 20, sandbox_memory_gb = 8;
  std::string sandbox = "auto", sandbox_cgroup;
  uint64_t seed = 0;
  bool no_cache = false, no_op_check = false, no_warm = false, no_resident = false,
       no_behaviour_check = false, no_import_check = false, forbid_fallback_code = false,
       no_stable_malloc = false, no_host_head_start = false;
  double max_library_mib = 1024;
};

// --seed: an unsigned 64-bit integer, with a message that says so (CLI11's own is a
// bare "could not convert").
CLI::Validator seed_range() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        uint64_t v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || p != s.data() + s.size())
          return "'" + s + "' is not an integer in [0, 18446744073709551615]";
        return "";
      },
      "UINT64");
}

void add_common(CLI::App* app, CommonFlags& f, EvalOptions& o) {
  app->add_option("--backend", f.backend, "cpu | cuda | musa")->capture_default_str();
  app->add_option("--tolerance-rtol", o.rtol, "relative tolerance (a task's sidecar overrides)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.999999));
  app->add_option("--tolerance-atol", o.atol, "absolute tolerance (a task's sidecar overrides)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.999999));
  app->add_option("--benchmark-iters", o.benchmark_iters, "timed calls per side")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app->add_option("--warmup-iters", o.warmup_iters, "untimed calls before timing")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app->add_option("--timing-rounds", o.timing_rounds,
                  "benchmark rounds, reference and candidate alternating; the speedup is the median of the "
                  "rounds' ratios (0: 5 on cpu, 1 on cuda/musa)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  app->add_option("--max-build-seconds", f.max_build_seconds, "build deadline")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  app->add_option("--max-run-seconds", f.max_run_seconds, "deadline of one runner process")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  app->add_option("--reward-scheme", f.reward_scheme, "lesson | tiered | kevin")->capture_default_str();
  app->add_option("--reward-speedup-cap", o.reward.speedup_cap, "lesson scheme: speedup where perf saturates")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1e6));
  app->add_option("--gpu", o.gpu_index, "GPU index for the cuda backend")
      ->capture_default_str()
      ->check(CLI::Range(0, 1023));
  app->add_option("--prestart-runners", o.prestart_runners,
                  "candidate runners started ahead of the run slots (-1: 1 on cpu; on GPUs workers - run "
                  "slots, 4 to 16)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1024));
  app->add_option("--cuda-max-connections", o.cuda_max_connections,
                  "CUDA_DEVICE_MAX_CONNECTIONS for runners on GPUs (0: the driver's default)")
      ->capture_default_str()
      ->check(CLI::Range(0, 32));
  app->add_option("--run-slots", o.run_slots, "candidates on the device at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app->add_option("--cpu-threads", o.cpu_threads, "torch threads in runners (0: default)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app->add_option("--seed", f.seed, "fix the input seeds (default: fresh every evaluation)")->check(seed_range());
  app->add_option("--python", f.python, "Python interpreter with torch for the runner")
      ->capture_default_str();
  app->add_option("--runner-dir", f.runner_dir, "directory holding mooreeval_runner/ (default: source tree)");
  app->add_option("--cache-dir", f.cache_dir, "build cache (default: ~/.cache/mooreeval/builds)");
  app->add_flag("--no-cache", f.no_cache, "do not use the build cache");
  app->add_option("--cache-max-gb", f.cache_max_gb,
                  "evict least recently used builds above this size (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  app->add_option("--build-path", f.build_path,
                  "auto (lean headers where they compile, else load_inline's build) | lean | full")
      ->capture_default_str();
  app->add_option("--build-workers", o.build_workers, "concurrent builds (0: one per core)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app->add_flag("--no-warm-runners", f.no_warm, "start a fresh interpreter per runner job (no zygote)");
  app->add_flag("--no-resident-reference", f.no_resident,
                "run each reference in a process of its own, not in a resident server per run slot");
  app->add_option("--lean-dir", o.lean_dir, "lean build sources (default: source tree's src/mooreeval/compile/lean)");
  app->add_option("--work-dir", f.work_dir, "parent of per-job temp dirs");
  app->add_flag("--keep-work-dirs", o.keep_work_dirs, "keep per-job dirs for debugging");
  app->add_flag("--no-runtime-op-check", f.no_op_check, "skip the dispatched-ops legality check");
  app->add_flag("--no-stable-malloc", f.no_stable_malloc,
                "runners use glibc malloc's default (dynamic mmap threshold, heap trimming): less repeatable "
                "timings on cpu");
  app->add_flag("--no-host-head-start", f.no_host_head_start,
                "cuda: no device-side wait before each timed call (a slow call path's idle device time is then "
                "timed)");
  app->add_flag("--no-import-check", f.no_import_check,
                "skip the check of what each built library imports (compute below the dispatcher, vendor "
                "BLAS/DNN, dlopen/dlsym)");
  app->add_option("--min-own-kernel-share", o.legality.min_own_kernel_share,
                  "cuda: least share of compute-kernel time in the candidate's own kernels (0: off)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app->add_flag("--forbid-fallback-code", f.forbid_fallback_code,
                "reject PyTorch compute anywhere in forward and any try/except there before the run (default: "
                "allowed in conditional blocks the run never enters)");
  app->add_option("--sandbox", f.sandbox,
                  "per-job sandbox: on | off | auto (auto: on where it works, else off with a logged reason)")
      ->capture_default_str();
  app->add_option("--sandbox-cgroup", f.sandbox_cgroup,
                  "delegated cgroup v2 dir for per-job memory/pids limits (default: this process's cgroup)");
  app->add_option("--sandbox-memory-gb", f.sandbox_memory_gb,
                  "memory limit per sandboxed process tree (cgroup memory.max, else RLIMIT_AS for CPU jobs)")
      ->capture_default_str()
      ->check(CLI::Range(0.25, 4096.0));
  app->add_flag(
      "--no-runtime-behaviour-check", f.no_behaviour_check,
      "skip the run-time legality checks (input mutation, threads, harness patching, decoy kernels, "
      "consistency calls)");
  app->add_option("--recheck-speedup-above", o.legality.recheck_speedup_above,
                  "re-measure a speedup above this with a second method and keep the smaller (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  app->add_option("--max-library-mib", f.max_library_mib,
                  "largest mapped size of a built extension (static arrays above it are illegal)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1048576.0));
}

// Resolves flags into EvalOptions; returns an error message or "".
std::string resolve(const CommonFlags& f, CLI::App* app, EvalOptions& o) {
  auto backend = musacoder::build::parse_backend(f.backend);
  if (!backend.ok()) return backend.status().message();
  o.backend = *backend;
  auto scheme = musacoder::reward::parse_scheme(f.reward_scheme);
  if (!scheme.ok()) return scheme.status().message();
  o.reward.scheme = *scheme;
  auto build_path = musacoder::build::parse_build_path(f.build_path);
  if (!build_path.ok()) return build_path.status().message();
  o.build_path = *build_path;
  if (!(f.cache_max_gb >= 0)) return "--cache-max-gb must be >= 0";
  o.cache_max_bytes = static_cast<uint64_t>(f.cache_max_gb * double(1ull << 30));
  if (o.build_workers < 0) return "--build-workers must be >= 0";
  if (o.prestart_runners < -1) return "--prestart-runners must be >= -1";
  if (o.cuda_max_connections < 0 || o.cuda_max_connections > 32)
    return "--cuda-max-connections must be in [0, 32]";
  o.warm_runners = !f.no_warm;
  o.resident_reference = !f.no_resident;
  if (!(o.rtol >= 0 && o.rtol < 1) || !(o.atol >= 0 && o.atol < 1)) return "tolerances must be in [0, 1)";
  o.max_build = std::chrono::milliseconds(static_cast<long>(f.max_build_seconds * 1000));
  o.max_run = std::chrono::milliseconds(static_cast<long>(f.max_run_seconds * 1000));
  if (app->count("--seed")) o.seed = f.seed;
  o.legality.check_runtime_ops = !f.no_op_check;
  o.legality.check_library_imports = !f.no_import_check;
  o.stable_malloc = !f.no_stable_malloc;
  o.host_head_start = !f.no_host_head_start;
  o.legality.forbid_fallback_code = f.forbid_fallback_code;
  auto sandbox_mode = musacoder::sandbox::parse_sandbox_mode(f.sandbox);
  if (!sandbox_mode.ok()) return sandbox_mode.status().message();
  o.sandbox.mode = *sandbox_mode;
  o.sandbox.cgroup_parent = f.sandbox_cgroup;
  o.sandbox.memory_bytes = static_cast<std::size_t>(f.sandbox_memory_gb * double(1 << 30));
  o.legality.check_runtime_behaviour = !f.no_behaviour_check;
  o.legality.max_library_bytes = static_cast<std::size_t>(f.max_library_mib * 1024 * 1024);
  o.runner.python = f.python;
  auto runner_dir = musacoder::run::locate_runner_dir(f.runner_dir);
  if (!runner_dir.ok()) return runner_dir.status().message();
  o.runner.runner_dir = *runner_dir;
  if (!f.work_dir.empty()) o.work_root = fs::absolute(f.work_dir);
  if (!f.no_cache)
    o.cache_dir = f.cache_dir.empty() ? musacoder::mooreeval::default_cache_dir() : fs::path(f.cache_dir);
  return "";
}

fs::path default_dir(const char* env, const std::string& sub) {
  if (const char* v = std::getenv(env); v && *v) return v;
  return fs::path(MOOREEVAL_SOURCE_DIR) / sub;
}

// The launcher's own flags (suite, workers, MUSA versions); shared by launch and serve.
void add_launch_flags(CLI::App* app, musacoder::tools::LaunchCommand& c, int min_workers) {
  app->add_option("--workers", c.workers,
                  "concurrent evaluations (launch: builds overlap runs; serve: local worker threads)")
      ->capture_default_str()
      ->check(CLI::Range(min_workers, 1024));
  app->add_option("--musa-sdk-version", c.musa_sdk_version, "required MUSA SDK version (musa backend)");
  app->add_option("--torch-musa", c.torch_musa_version, "required torch_musa version (musa backend)");
  app->add_option("--reference-impl", c.reference_impl, "reference implementation (torch)")
      ->capture_default_str();
  app->add_option("--tasks", c.tasks_dir, "task suite")->capture_default_str();
  app->add_option("--solutions", c.solutions_dir, "reference solutions root")->capture_default_str();
  app->add_option("--broken", c.broken_dir, "broken candidates (manifest.json)")->capture_default_str();
  app->add_option("--out", c.out, "also write every verdict as JSONL here (launch without --listen)");
}

// The service's flags other than --listen (docs/service.md).
void add_service_flags(CLI::App* app, musacoder::tools::ServeCommand& c) {
  app->add_option("--db", c.db, "SQLite database of jobs, results and job log")->capture_default_str();
  app->add_option("--queue", c.queue, "redis://HOST:PORT: a Redis Streams queue for a worker fleet");
  app->add_option("--queue-prefix", c.queue_prefix, "Redis key and group prefix")->capture_default_str();
  app->add_option("--visibility-timeout", c.visibility_timeout_seconds,
                  "seconds before a dead worker's pending job is reclaimed (Redis)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  app->add_option("--max-deliveries", c.max_deliveries,
                  "deliveries of one job before it is stored as infra_error")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app->add_option("--http-threads", c.http_threads, "HTTP handler threads")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  app->add_option("--max-batch", c.max_batch_jobs, "jobs per batch request")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app->add_option("--max-body-bytes", c.max_body_bytes, "largest request body")
      ->capture_default_str()
      ->check(CLI::Range(1024, 1 << 30));
  app->add_option("--default-deadline", c.default_deadline_seconds,
                  "seconds POST /v1/evaluate waits when the request names no deadline")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app->add_option("--auth", c.auth, "tokens | none (none: no authentication, loopback --listen only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"tokens", "none"}));
  app->add_option("--tokens", c.tokens_file,
                  "API token table: lines '<name> <scope> <sha256>' (`mooreeval token`); default: "
                  "$MOOREEVAL_TOKENS");
  app->add_option("--allowed-host", c.allowed_hosts,
                  "Host header name served besides IP literals and localhost (repeatable; e.g. behind a proxy)");
  app->add_option("--allowed-origin", c.allowed_origins,
                  "browser Origin allowed to call the API (repeatable; default none)");
  app->add_option("--redis-user", c.redis_user, "Redis ACL user (password: --redis-password-file or "
                                                "$MOOREEVAL_REDIS_PASSWORD)");
  app->add_option("--redis-password-file", c.redis_password_file, "file whose first line is the Redis password");
  app->add_option("--max-connections", c.max_connections,
                  "open connections; at the cap the longest-stalled one is closed for a new one")
      ->capture_default_str()
      ->check(CLI::Range(8, 1000000));
  app->add_option("--header-timeout", c.header_timeout_seconds, "seconds to receive a request's head")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app->add_option("--body-timeout", c.body_timeout_seconds, "seconds to receive a request's body")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app->add_option("--rate-limit", c.rate_per_second, "submitting requests/s per token name (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  app->add_option("--rate-burst", c.rate_burst, "submitting requests at once after idling, per token name")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e6));
  app->add_option("--max-unfinished-per-token", c.max_unfinished_per_token,
                  "queued + running jobs per token name (429 above)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app->add_option("--max-unfinished", c.max_unfinished, "queued + running jobs in all (429 above)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app->add_option("--retention-days", c.retention_days, "finished jobs, verdicts and logs are kept this long")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 36500.0));
  app->add_option("--max-store-mb", c.max_store_mb,
                  "store size bound: oldest finished jobs go first; submissions get 507 while above")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e9));
  app->add_option("--retention-interval", c.retention_interval_seconds, "seconds between retention passes")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 86400.0));
}

}  // namespace

int main(int argc, char** argv) {
  namespace t = musacoder::tools;
  CLI::App app{"MooreEval: compile, verify, benchmark and score KernelBench-format GPU kernel candidates"};
  app.require_subcommand(1);

  EvalOptions eval_opts, batch_opts, launch_opts;
  CommonFlags eval_flags, batch_flags, launch_flags;

  t::EvalCommand eval_cmd{"", "", default_dir("MOOREEVAL_TASKS_DIR", "tasks")};
  auto* eval = app.add_subcommand("eval", "evaluate one candidate against one task");
  eval->add_option("--task", eval_cmd.task, "task file or task id (e.g. elementwise/add)")->required();
  eval->add_option("--candidate", eval_cmd.candidate, "submission: a Python file or a raw model response")
      ->required();
  eval->add_option("--tasks-dir", eval_cmd.tasks_dir, "suite for task ids")->capture_default_str();
  eval->add_flag("--json", eval_cmd.json, "print the verdict as JSON");
  eval->add_option("--replay", eval_cmd.replay,
                   "VERDICT.json (eval --json) of this task and candidate: re-run it with its recorded settings "
                   "and seeds");
  eval->add_flag("--warm-runners", eval_cmd.warm_runners,
                 "start the zygote and the resident reference as eval-batch does (a one-shot does not: it would "
                 "wait for their torch imports)");
  add_common(eval, eval_flags, eval_opts);

  t::BatchCommand batch_cmd;
  auto* batch = app.add_subcommand("eval-batch", "evaluate a directory of samples against a task suite");
  batch->add_option("--tasks", batch_cmd.tasks_dir, "task suite directory")->required();
  batch->add_option("--samples", batch_cmd.samples_dir, "samples: <dir>/<task>.py or <dir>/<task>/*")
      ->required();
  batch->add_option("--workers", batch_cmd.workers, "concurrent evaluations")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  batch->add_option("--out", batch_cmd.out, "JSONL output file (default: stdout)");
  batch->add_flag("--quiet", batch_cmd.quiet, "no table on stderr");
  add_common(batch, batch_flags, batch_opts);

  t::LaunchCommand launch_cmd{default_dir("MOOREEVAL_TASKS_DIR", "tasks"),
                              default_dir("MOOREEVAL_SOLUTIONS_DIR", "solutions"),
                              fs::path(MOOREEVAL_SOURCE_DIR) / "tests" / "fixtures" / "candidates"};
  auto* launch = app.add_subcommand(
      "launch",
      "the lesson's launcher; embedded default: verify the bundled suite's reference solutions and "
      "broken candidates and print the verdict table; with --listen: serve the HTTP API instead");
  add_launch_flags(launch, launch_cmd, 1);
  t::ServeCommand launch_serve;
  launch->add_option("--listen", launch_serve.listen, "HOST:PORT: run the service (as `serve`) instead");
  add_service_flags(launch, launch_serve);
  add_common(launch, launch_flags, launch_opts);

  t::LaunchCommand serve_launch = launch_cmd;
  t::ServeCommand serve_cmd;
  EvalOptions serve_opts;
  CommonFlags serve_flags;
  auto* serve =
      app.add_subcommand("serve", "the MooreEval HTTP service (docs/service.md, docs/openapi.yaml)");
  add_launch_flags(serve, serve_launch, 0);
  serve->add_option("--listen", serve_cmd.listen, "HOST:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  add_service_flags(serve, serve_cmd);
  add_common(serve, serve_flags, serve_opts);

  t::WorkerCommand worker_cmd;
  worker_cmd.tasks_dir = default_dir("MOOREEVAL_TASKS_DIR", "tasks");
  EvalOptions worker_opts;
  CommonFlags worker_flags;
  auto* worker =
      app.add_subcommand("worker", "a fleet worker: pulls jobs from Redis, evaluates, reports verdicts");
  worker->add_option("--queue", worker_cmd.queue, "redis://HOST:PORT of the service's queue")->required();
  worker->add_option("--queue-prefix", worker_cmd.queue_prefix, "Redis key and group prefix")
      ->capture_default_str();
  worker->add_option("--name", worker_cmd.name, "worker name (default host:pid)");
  worker->add_option("--tasks", worker_cmd.tasks_dir, "task suite (the server's, same ids)")
      ->capture_default_str();
  worker->add_option("--workers", worker_cmd.threads, "concurrent evaluations in this process")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  worker
      ->add_option("--visibility-timeout", worker_cmd.visibility_timeout_seconds,
                   "seconds before another worker's idle pending job is reclaimed")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  worker
      ->add_option("--max-deliveries", worker_cmd.max_deliveries,
                   "deliveries of one job before it is stored as infra_error")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  worker
      ->add_option("--keep-alive-seconds", worker_cmd.keep_alive_seconds,
                   "heartbeat and in-flight refresh period (default: visibility timeout / 4)")
      ->check(CLI::Range(0.05, 3600.0));
  worker->add_option("--redis-user", worker_cmd.redis_user,
                     "Redis ACL user (password: --redis-password-file or $MOOREEVAL_REDIS_PASSWORD)");
  worker->add_option("--redis-password-file", worker_cmd.redis_password_file,
                     "file whose first line is the Redis password");
  add_common(worker, worker_flags, worker_opts);

  t::TokenCommand token_cmd;
  auto* token = app.add_subcommand(
      "token", "make an API token for `serve`: prints the token once; its hash goes to the token table");
  token->add_option("--name", token_cmd.name, "owner name of the jobs this token submits")->required();
  token->add_option("--scope", token_cmd.scope, "read | submit | admin")
      ->capture_default_str()
      ->check(CLI::IsMember({"read", "submit", "admin"}));
  token->add_option("--append-to", token_cmd.append_to, "append the table line to this file (created 0600)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : t::kExitBadInput;
  }
  auto fail = [](const std::string& message) {
    std::cerr << "mooreeval: error: " << (message.empty() ? "invalid flags (no detail)" : message) << "\n";
    return t::kExitBadInput;
  };
  // Every temp dir of this run goes under one locked run dir; dead runs' dirs are swept.
  std::optional<musacoder::RunDir> run_dir;
  auto own_run_dir = [&run_dir](EvalOptions& o) -> std::string {
    if (o.keep_work_dirs) return "";  // kept dirs stay where they are, for debugging
    const auto swept = musacoder::sweep_dead_runs(o.work_root);
    if (swept.removed > 0)
      std::cerr << "mooreeval: removed " << swept.removed << " temp dir(s) of dead runs\n";
    if (!swept.first_error.empty()) std::cerr << "mooreeval: note: sweep: " << swept.first_error << "\n";
    auto dir = musacoder::RunDir::create(o.work_root);
    if (!dir.ok()) return dir.status().message();
    run_dir.emplace(std::move(*dir));
    o.work_root = run_dir->path();
    return "";
  };
  auto prepare = [&](const CommonFlags& f, CLI::App* sub, EvalOptions& o) -> std::string {
    if (auto e = resolve(f, sub, o); !e.empty()) return e;
    return own_run_dir(o);
  };
  if (token->parsed()) return t::run_token(token_cmd);
  if (eval->parsed()) {
    if (auto e = prepare(eval_flags, eval, eval_opts); !e.empty()) return fail(e);
    if (!eval_cmd.warm_runners) eval_opts.warm_runners = eval_opts.resident_reference = false;
    return t::run_eval(eval_cmd, eval_opts);
  }
  if (batch->parsed()) {
    if (auto e = prepare(batch_flags, batch, batch_opts); !e.empty()) return fail(e);
    return t::run_eval_batch(batch_cmd, batch_opts);
  }
  if (serve->parsed()) {
    if (auto e = prepare(serve_flags, serve, serve_opts); !e.empty()) return fail(e);
    return t::run_serve(serve_cmd, serve_launch, serve_opts);
  }
  if (worker->parsed()) {
    if (auto e = prepare(worker_flags, worker, worker_opts); !e.empty()) return fail(e);
    return t::run_worker(worker_cmd, worker_opts);
  }
  if (auto e = prepare(launch_flags, launch, launch_opts); !e.empty()) return fail(e);
  if (launch->count("--listen")) return t::run_serve(launch_serve, launch_cmd, launch_opts);
  return t::run_launch(launch_cmd, launch_opts);
}
