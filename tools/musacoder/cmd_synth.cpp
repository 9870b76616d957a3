// musacoder synth: operator programs -> MooreEval-verified (task -> kernel) SFT pairs
// (src/data/synth.h; docs/synthesis.md).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "commands.h"
#include "data/grammar.h"
#include "data/synth.h"
#include "data/teacher.h"
#include "mooreeval/mooreeval.h"

namespace musacoder::tool {
namespace {

struct SynthFlags {
  data::SynthOptions o;
  std::vector<std::string> dtypes;
  std::string teacher = "rule", teacher_url, teacher_model, teacher_key_env = "OPENAI_API_KEY", keep = "ok";
  std::string cache_dir, runner_dir;
  int max_build_seconds = 120, max_run_seconds = 60;
  bool tasks_only = false, no_cache = false;
};

Result<data::DType> parse_dtype(const std::string& s) {
  for (data::DType d : {data::DType::kFloat32, data::DType::kFloat16, data::DType::kBFloat16})
    if (s == data::dtype_name(d)) return d;
  return invalid_argument("unknown dtype '" + s + "' (float32, float16, bfloat16)");
}

Result<std::unique_ptr<data::Teacher>> make_teacher(const SynthFlags& f) {
  if (f.teacher == "rule") return data::make_rule_teacher();
  if (f.teacher == "endpoint") {
    data::EndpointOptions e;
    e.base_url = f.teacher_url;
    e.model = f.teacher_model;
    if (const char* key = std::getenv(f.teacher_key_env.c_str())) e.api_key = key;
    return data::make_endpoint_teacher(e);
  }
  return invalid_argument("--teacher must be rule or endpoint (the engine teacher comes with the engine)");
}

Status resolve(SynthFlags& f) {
  for (const std::string& d : f.dtypes) {
    auto dt = parse_dtype(d);
    if (!dt.ok()) return dt.status();
    f.o.grammar.dtypes.push_back(*dt);
  }
  if (f.keep != "ok" && f.keep != "wrong") return invalid_argument("--keep must be ok or wrong");
  f.o.keep_wrong = f.keep == "wrong";
  auto& v = f.o.verifier;
  v.backend = f.o.backend;
  v.max_build = std::chrono::seconds(f.max_build_seconds);
  v.max_run = std::chrono::seconds(f.max_run_seconds);
  if (!v.seed) v.seed = data::mix_seed(f.o.seed, 0x5eed);
  v.runner_dir = f.runner_dir;
  if (!f.no_cache) {
    if (!f.cache_dir.empty())
      v.cache_dir = f.cache_dir;
    else
      v.cache_dir = mooreeval::default_cache_dir();
  }
  return Status::ok_status();
}

void print_report(const data::SynthReport& r, const SynthFlags& f) {
  std::printf("programs %d (duplicates dropped %d, decontaminated %d), resumed %d, verified now %d\n",
              r.programs, r.duplicates, r.contaminated, r.resumed, r.verified);
  std::printf("kept %d, rejected %d, repairs %d; %.1f s, %.2f pairs/s -> %s/sft.jsonl\n", r.kept, r.rejected,
              r.repairs, r.seconds, r.pairs_per_second, f.o.out_dir.c_str());
}

int run_synth(SynthFlags& f) {
  if (Status s = resolve(f); !s.ok()) return fail("synth", s);
  if (f.tasks_only) {
    auto r = data::write_task_set(f.o);
    if (!r.ok()) return fail("synth", r.status());
    print_report(*r, f);
    return 0;
  }
  auto teacher = make_teacher(f);
  if (!teacher.ok()) return fail("synth", teacher.status());
  std::unique_ptr<data::Teacher> fixer = f.o.keep_wrong ? data::make_rule_teacher() : nullptr;
  auto verifier = data::Verifier::create(f.o.verifier);
  if (!verifier.ok()) return fail("synth", verifier.status());
  auto r = data::run_synthesis(f.o, **teacher, fixer.get(), verifier->get());
  if (!r.ok()) return fail("synth", r.status());
  print_report(*r, f);
  return r->kept > 0 ? 0 : 1;
}

}  // namespace

Command add_synth_command(CLI::App& app) {
  auto f = std::make_shared<SynthFlags>();
  CLI::App* sub = app.add_subcommand("synth", "synthesize MooreEval-verified (task -> kernel) SFT pairs");
  auto& o = f->o;
  sub->add_option("--out", o.out_dir, "output directory (tasks/, sft.jsonl, card; a rerun resumes)")
      ->required();
  sub->add_option("--count", o.count, "programs (tasks) to synthesize")->capture_default_str();
  sub->add_option("--seed", o.seed, "seed: the same seed gives the same programs, prompts and answers")
      ->capture_default_str();
  sub->add_option("--categories", o.grammar.categories, "categories to draw (default: all)")->delimiter(',');
  sub->add_option("--dtypes", f->dtypes, "dtypes to draw: float32,float16,bfloat16 (default: 60/20/20)")
      ->delimiter(',');
  sub->add_option("--exclude-suite", o.exclude_suite,
                  "benchmark checkout (e.g. KernelBench) to decontaminate against");
  sub->add_option("--ngram-threshold", o.decontamination.ngram_threshold,
                  "flag at this share of shared 8-grams")
      ->capture_default_str();
  sub->add_option("--backend", o.backend, "cpu | cuda: the kernels' target and the verifier's backend")
      ->capture_default_str();
  sub->add_option("--teacher", f->teacher, "rule | endpoint")->capture_default_str();
  sub->add_option("--teacher-url", f->teacher_url,
                  "OpenAI-compatible base URL, e.g. http://localhost:8000/v1");
  sub->add_option("--teacher-model", f->teacher_model, "the endpoint's model name");
  sub->add_option("--teacher-key-env", f->teacher_key_env, "environment variable holding the API key")
      ->capture_default_str();
  sub->add_option("--samples", o.samples, "answers per task (K); the best verified one is kept")
      ->capture_default_str();
  sub->add_option("--keep", f->keep,
                  "ok | wrong (wrong: failures + verdict + a verified fix -> repair.jsonl)")
      ->capture_default_str();
  sub->add_flag("--stable-metadata", o.stable_metadata,
                "leave measured values (speedup, times) out of the outputs");
  sub->add_flag("--tasks-only", f->tasks_only,
                "write the decontaminated task set only (no teacher, no verifier)");
  sub->add_flag("!--no-progress", o.progress, "no progress bar");
  auto& v = o.verifier;
  sub->add_option("--workers", v.workers, "concurrent verifications (and teacher requests)")
      ->capture_default_str();
  sub->add_option("--run-slots", v.run_slots, "candidates on the device at once")->capture_default_str();
  sub->add_option("--warmup-iters", v.warmup_iters, "benchmark warm-up calls")->capture_default_str();
  sub->add_option("--benchmark-iters", v.benchmark_iters, "benchmark timed calls")->capture_default_str();
  sub->add_option("--max-build-seconds", f->max_build_seconds, "build deadline per candidate")
      ->capture_default_str();
  sub->add_option("--max-run-seconds", f->max_run_seconds, "run deadline per runner")->capture_default_str();
  sub->add_option("--cpu-threads", v.cpu_threads, "torch threads in runners (0: default)")
      ->capture_default_str();
  sub->add_option("--cache-dir", f->cache_dir, "build cache (default: ~/.cache/mooreeval/builds)");
  sub->add_flag("--no-cache", f->no_cache, "no build cache");
  sub->add_option("--runner-dir", f->runner_dir,
                  "directory holding mooreeval_runner/ (default: source tree)");
  sub->add_option("--python", v.python, "interpreter with torch")->capture_default_str();
  sub->add_option("--sandbox", v.sandbox, "on | off | auto")->capture_default_str();
  return {sub, [f] { return run_synth(*f); }};
}

}  // namespace musacoder::tool
