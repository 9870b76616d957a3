// Held-out evaluation of one checkpoint: the KernelBench harness (kernelbench::run_eval) with the built-in
// engine and the in-process MooreEval scorer, first turn only, the quickstart's k samples per task.
#include <chrono>
#include <nlohmann/json.hpp>

#include "kernelbench/eval_run.h"
#include "kernelbench/model_client.h"
#include "kernelbench/scorer.h"
#include "kernelbench/suite.h"
#include "quickstart/stages.h"

namespace musacoder::quickstart {
namespace fs = std::filesystem;
namespace {

kernelbench::ScorerSettings scorer_settings(const QuickstartOptions& o, const fs::path& out) {
  kernelbench::ScorerSettings s;
  s.verifier = verifier_settings(o);
  s.verifier.build_path = "lean";  // quickstart.h: a compile error costs no full build
  s.scratch_dir = out / "scratch";
  return s;
}

kernelbench::EngineClientOptions engine_options(const QuickstartOptions& o, const fs::path& model) {
  kernelbench::EngineClientOptions e;
  e.model_dir = model;
  e.model.device = o.backend == "cuda" ? "cuda" : "cpu";
  e.model.dtype = "float32";
  e.engine.max_model_len = 2 * o.max_seq_len;
  e.engine.max_num_seqs = 64;
  // On a GPU enough for every sequence at once (SmolLM2 in float32: 46 KB a token, 64 × ~4K tokens); 0.5 GB
  // there held ~11K tokens, five or six answers at a time.
  e.engine.kv_cache_gb = o.backend == "cuda" ? 12.0 : 0.5;
  return e;
}

kernelbench::EvalOptions eval_options(const QuickstartOptions& o, const fs::path& out) {
  kernelbench::EvalOptions e;
  e.samples = o.samples;
  e.turns = 1;
  e.sampling.temperature = o.temperature;
  e.sampling.max_new_tokens = max_new_tokens(o);
  e.prompt.target = o.backend == "cuda" ? prompts::Target::kCuda : prompts::Target::kCpu;
  e.seed = o.seed;
  e.out_dir = out;
  e.concurrency = 64;
  e.progress_interval_seconds = o.progress ? 15 : 0;
  return e;
}

// overall[key].mean, or 0 when the report has none.
double mean_of(const nlohmann::json& overall, const std::string& key) {
  const nlohmann::json* v = overall.contains(key) ? &overall[key] : nullptr;
  return v && v->is_object() && v->contains("mean") && (*v)["mean"].is_number() ? (*v)["mean"].get<double>()
                                                                                : 0.0;
}

}  // namespace

Result<EvalPoint> evaluate(const QuickstartOptions& o, const std::string& stage, const fs::path& model,
                           const fs::path& heldout_tasks, const fs::path& out) {
  const auto start = std::chrono::steady_clock::now();
  auto suite = kernelbench::load_task_folder(heldout_tasks);
  if (!suite.ok()) return suite.status();
  auto scorer = kernelbench::Scorer::create(scorer_settings(o, out));
  if (!scorer.ok()) return scorer.status();
  auto client = kernelbench::make_engine_client(engine_options(o, model));
  if (!client.ok()) return client.status();
  kernelbench::EvalHooks hooks;
  if (o.progress)
    hooks.progress = [&stage](const std::string& line) {
      std::fprintf(stderr, "  [%s] %s\n", stage.c_str(), line.c_str());
    };
  auto summary = kernelbench::run_eval(*suite, **client, **scorer, eval_options(o, out), hooks);
  if (!summary.ok()) return summary.status();
  const nlohmann::json overall = (*summary)["views"]["best"].value("overall", nlohmann::json::object());
  EvalPoint p{stage};
  p.pass_at_1 = mean_of(overall, "pass_at_1");
  p.pass_at_k = mean_of(overall, "pass_at_k");
  p.avg_at_k = mean_of(overall, "avg_at_k");
  p.fast_1 = overall.contains("fast_p") ? mean_of(overall["fast_p"], "1") : 0.0;
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  p.report = out / "report.html";
  return p;
}

}  // namespace musacoder::quickstart
