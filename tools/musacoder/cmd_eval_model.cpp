// musacoder eval-model: evaluates a model on a KernelBench-format suite the way the paper does (8 samples at
// T=0.7, top-p 0.95; Pass@k, Avg@k, fast_p, geomean speedup; optional multi-turn repair) and writes
// samples.jsonl, summary.json, summary.md and report.html to --out. Rerunning on the same --out resumes.
// docs/eval-model.md.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "command.h"
#include "commands.h"
#include "kernelbench/eval_run.h"
#include "kernelbench/report.h"
#include "mooreeval/mooreeval.h"

namespace musacoder::tool {
namespace {

struct EvalModelFlags {
  // suite
  std::string tasks_dir, kernelbench_dir, levels = "1,2,3", problems;
  // model
  kernelbench::EngineClientOptions engine;
  bool no_thinking = false;
  std::string endpoint, model_name = "model", api_key_env = "OPENAI_API_KEY";
  double request_timeout = 600;
  // protocol and execution
  kernelbench::EvalOptions o;
  std::string prompt_template = "musacoder", target;
  bool no_stop_on_pass = false, no_retry_infra = false, list_tasks = false;
  // scoring
  kernelbench::ScorerSettings scorer;
  std::string build_cache;
  int max_build_seconds = 120, max_run_seconds = 60;
};

Result<kernelbench::Suite> load_suite(const EvalModelFlags& f) {
  if (f.kernelbench_dir.empty())
    return kernelbench::load_task_folder(f.tasks_dir.empty() ? "tasks" : f.tasks_dir);
  if (!f.tasks_dir.empty()) return invalid_argument("give --tasks or --kernelbench-dir, not both");
  kernelbench::KernelBenchSelection sel;
  auto levels = kernelbench::parse_id_list(f.levels);
  if (!levels.ok()) return levels.status();
  sel.levels = *levels;
  if (!f.problems.empty()) {
    auto p = kernelbench::parse_id_list(f.problems);
    if (!p.ok()) return p.status();
    sel.problems = *p;
  }
  return kernelbench::load_kernelbench(f.kernelbench_dir, sel);
}

Result<std::unique_ptr<kernelbench::ModelClient>> make_model(EvalModelFlags& f) {
  if (!f.endpoint.empty() == !f.engine.model_dir.empty())
    return invalid_argument("give --model DIR or --endpoint URL");
  if (!f.engine.model_dir.empty()) {
    f.engine.enable_thinking = !f.no_thinking;
    return kernelbench::make_engine_client(f.engine);
  }
  engine::RemoteOptions r;
  r.base_url = f.endpoint;
  r.model = f.model_name;
  r.timeout_seconds = f.request_timeout;
  r.concurrency = f.o.concurrency;
  if (const char* key = std::getenv(f.api_key_env.c_str())) r.api_key = key;
  return kernelbench::make_endpoint_client(r);
}

Status resolve(EvalModelFlags& f) {
  auto t = kernelbench::parse_prompt_template(f.prompt_template);
  if (!t.ok()) return t.status();
  f.o.prompt_template = *t;
  auto target = prompts::parse_target(f.target.empty() ? f.scorer.verifier.backend : f.target);
  if (!target.ok()) return target.status();
  f.o.prompt.target = *target;
  f.o.stop_on_pass = !f.no_stop_on_pass;
  f.o.retry_infra = !f.no_retry_infra;
  auto& v = f.scorer.verifier;
  v.max_build = std::chrono::seconds(f.max_build_seconds);
  v.max_run = std::chrono::seconds(f.max_run_seconds);
  if (!f.build_cache.empty())
    v.cache_dir = f.build_cache;
  else
    v.cache_dir = mooreeval::default_cache_dir();
  f.scorer.scratch_dir = f.o.out_dir / "scratch";
  return Status::ok_status();
}

std::atomic<bool> g_stop{false};  // set by SIGINT/SIGTERM: stop taking turns, keep what is recorded

int run_eval_model(EvalModelFlags& f) {
  if (Status s = resolve(f); !s.ok()) return fail("eval-model", s);
  auto suite = load_suite(f);
  if (!suite.ok()) return fail("eval-model", suite.status());
  std::fprintf(stderr, "eval-model: suite %s (%zu tasks, %zu usable, hash %.16s)\n", suite->id.c_str(),
               suite->tasks.size(), suite->usable_count(), suite->content_hash.c_str());
  for (const auto& t : suite->tasks)
    if (!t.usable())
      std::fprintf(stderr, "eval-model: task %s cannot be used: %s\n", t.id.c_str(), t.load_error.c_str());
  if (f.list_tasks) {
    for (const auto& t : suite->tasks)
      std::printf("%d\t%s\t%s\n", t.level, t.id.c_str(), t.usable() ? "ok" : t.load_error.c_str());
    return 0;
  }
  if (f.o.out_dir.empty()) return fail("eval-model", invalid_argument("--out DIR is required"));
  auto scorer = kernelbench::Scorer::create(f.scorer);
  if (!scorer.ok()) return fail("eval-model", scorer.status());
  auto model = make_model(f);
  if (!model.ok()) return fail("eval-model", model.status());
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });
  kernelbench::EvalHooks hooks;
  hooks.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  hooks.stop = &g_stop;
  auto summary = kernelbench::run_eval(*suite, **model, **scorer, f.o, hooks);
  if (!summary.ok()) return fail("eval-model", summary.status());
  std::printf("%s", kernelbench::summary_markdown(*summary).c_str());
  std::fprintf(stderr, "eval-model: %s -> %s/{summary.md,report.html,samples.jsonl}\n",
               g_stop ? "interrupted (rerun to resume)" : "done", f.o.out_dir.c_str());
  return g_stop ? 3 : 0;
}

void add_flags(CLI::App* sub, EvalModelFlags& f) {
  sub->add_option("--tasks", f.tasks_dir,
                  "a folder of KernelBench-format tasks (default: the bundled tasks/)");
  sub->add_option("--kernelbench-dir", f.kernelbench_dir,
                  "a KernelBench checkout (KernelBench/level<N>/<id>_<Name>.py)");
  sub->add_option("--levels", f.levels, "KernelBench levels")->capture_default_str();
  sub->add_option("--problems", f.problems, "KernelBench problem ids, e.g. 1-20,42 (default: all)");
  sub->add_flag("--list-tasks", f.list_tasks, "print the suite's tasks (level, id, ok or why not) and exit");
  sub->add_option("--model", f.engine.model_dir, "Hugging Face checkpoint for the built-in engine");
  sub->add_option("--device", f.engine.model.device, "engine device")->capture_default_str();
  sub->add_option("--dtype", f.engine.model.dtype, "engine dtype (auto: bf16 on CUDA)")
      ->capture_default_str();
  sub->add_option("--kv-cache-gb", f.engine.engine.kv_cache_gb, "engine KV cache GiB (0: memory fraction)")
      ->capture_default_str();
  sub->add_option("--max-model-len", f.engine.engine.max_model_len, "engine context (0: the config's)")
      ->capture_default_str();
  sub->add_option("--max-num-seqs", f.engine.engine.max_num_seqs, "engine sequences at once")
      ->capture_default_str();
  sub->add_flag("--no-thinking", f.no_thinking, "Qwen3.5 templates: no <think> block");
  sub->add_option("--endpoint", f.endpoint, "an OpenAI-compatible server, e.g. http://127.0.0.1:8000");
  sub->add_option("--model-name", f.model_name, "the endpoint's model name")->capture_default_str();
  sub->add_option("--api-key-env", f.api_key_env, "environment variable holding the endpoint's API key")
      ->capture_default_str();
  sub->add_option("--request-timeout", f.request_timeout, "seconds per HTTP attempt")->capture_default_str();
  sub->add_option("--samples", f.o.samples, "samples per task (the k of Pass@k)")->capture_default_str();
  sub->add_option("--temperature", f.o.sampling.temperature, "sampling temperature")->capture_default_str();
  sub->add_option("--top-p", f.o.sampling.top_p, "nucleus mass")->capture_default_str();
  sub->add_option("--max-new-tokens", f.o.sampling.max_new_tokens, "tokens per answer")
      ->capture_default_str();
  sub->add_option("--turns", f.o.turns, "turns per sample (>1: repair with verdict feedback)")
      ->capture_default_str();
  sub->add_flag("--no-stop-on-pass", f.no_stop_on_pass,
                "keep taking turns after a correct one (to optimise)");
  sub->add_option("--prompt-template", f.prompt_template, "musacoder | kernelbench")->capture_default_str();
  sub->add_option("--target", f.target, "cuda | cpu | musa (default: --backend)");
  sub->add_option("--seed", f.o.seed, "run seed (sample s, turn t: seed*1e6 + 1000 s + t)")
      ->capture_default_str();
  sub->add_option("--out", f.o.out_dir, "run directory (rerun to resume); required unless --list-tasks");
  sub->add_option("--concurrency", f.o.concurrency, "samples in flight")->capture_default_str();
  sub->add_flag("--no-retry-infra", f.no_retry_infra,
                "on resume, keep infra failures instead of retrying them");
  sub->add_option("--progress-seconds", f.o.progress_interval_seconds, "progress line period (0: off)")
      ->capture_default_str();
  sub->add_option("--reward-env", f.scorer.service_url,
                  "a MooreEval service (http://host:port) instead of the in-process verifier");
  sub->add_option("--backend", f.scorer.verifier.backend, "verifier backend: cuda | cpu | musa")
      ->capture_default_str();
  sub->add_option("--verify-workers", f.scorer.verifier.workers, "concurrent verifications")
      ->capture_default_str();
  sub->add_option("--run-slots", f.scorer.verifier.run_slots, "candidates on the device at once")
      ->capture_default_str();
  sub->add_option("--warmup-iters", f.scorer.verifier.warmup_iters, "benchmark warm-up calls")
      ->capture_default_str();
  sub->add_option("--benchmark-iters", f.scorer.verifier.benchmark_iters, "timed calls")
      ->capture_default_str();
  sub->add_option("--max-build-seconds", f.max_build_seconds, "build deadline per candidate")
      ->capture_default_str();
  sub->add_option("--max-run-seconds", f.max_run_seconds, "run deadline per runner")->capture_default_str();
  sub->add_option("--python", f.scorer.verifier.python, "interpreter with torch")->capture_default_str();
  sub->add_option("--sandbox", f.scorer.verifier.sandbox, "on | off | auto")->capture_default_str();
  sub->add_option("--build-path", f.scorer.verifier.build_path,
                  "verifier build path: auto | lean | full (docs/build.md)")
      ->capture_default_str();
  sub->add_option("--build-cache", f.build_cache, "build cache dir (default ~/.cache/mooreeval/builds)");
}

}  // namespace

Command add_eval_model_command(CLI::App& app) {
  auto f = std::make_shared<EvalModelFlags>();
  f->scorer.verifier.backend = "cuda";
  CLI::App* sub = app.add_subcommand("eval-model",
                                     "evaluate a model on KernelBench (Pass@k, Avg@k, fast_p) with reports");
  add_flags(sub, *f);
  return {sub, [f] { return run_eval_model(*f); }};
}

}  // namespace musacoder::tool
