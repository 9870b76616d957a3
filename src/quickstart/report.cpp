// The quickstart's outputs: the before/after table (stdout), summary.json, curves.png (SFT loss, RL reward
// and first-turn pass rate, held-out Pass@k per stage; drawn by matplotlib in a python3 child, as
// `musacoder plot` does) and report.html linking each evaluation's own report.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/files.h"
#include "process/subprocess.h"
#include "quickstart/stages.h"

namespace musacoder::quickstart {
namespace fs = std::filesystem;
namespace {

constexpr const char* kCurvesScript = R"PY(
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
out, sft, rl, summary = sys.argv[1:5]
def series(path, key):
    xs, ys = [], []
    for line in open(path):
        r = json.loads(line)
        if r.get("split", "train") == "train" and isinstance(r.get(key), (int, float)):
            xs.append(r["step"]); ys.append(r[key])
    return xs, ys
s = json.load(open(summary))
fig, ax = plt.subplots(1, 3, figsize=(14, 4))
ax[0].plot(*series(sft, "loss")); ax[0].set_title("SFT loss"); ax[0].set_xlabel("update"); ax[0].set_yscale("log")
for key in ("reward/mean", "pass_rate/first_turn"):
    ax[1].plot(*series(rl, key), marker="o", label=key)
ax[1].set_title("RL (training tasks)"); ax[1].set_xlabel("step"); ax[1].legend()
names = [p["stage"] for p in s["points"]]
for i, key in enumerate(("pass_at_1", "pass_at_k")):
    ax[2].bar([j + 0.4 * i for j in range(len(names))], [p[key] for p in s["points"]], width=0.4, label=key)
ax[2].set_xticks([j + 0.2 for j in range(len(names))]); ax[2].set_xticklabels(names)
ax[2].set_title("held-out, first turn"); ax[2].set_ylim(0, 1); ax[2].legend()
for a in ax: a.grid(alpha=0.3)
fig.tight_layout(); fig.savefig(out, dpi=100)
)PY";

nlohmann::json point_json(const EvalPoint& p) {
  return {{"stage", p.stage},           {"pass_at_1", p.pass_at_1}, {"pass_at_k", p.pass_at_k},
          {"avg_at_k", p.avg_at_k},     {"fast_1", p.fast_1},       {"seconds", p.seconds},
          {"report", p.report.string()}};
}

nlohmann::json summary_json(const QuickstartOptions& o, const QuickstartResult& r) {
  nlohmann::json j = {{"schema", "musacoder.quickstart/1"},
                      {"seed", o.seed},
                      {"backend", o.backend},
                      {"k", o.samples},
                      {"temperature", o.temperature},
                      {"train_pairs", r.train_pairs},
                      {"heldout_tasks", r.heldout},
                      {"heldout_overlaps", r.overlaps},
                      {"base_model", o.base_model.empty() ? "tiny from scratch" : o.base_model.string()},
                      {"sft_steps", o.sft_steps},
                      {"sft_learning_rate", sft_learning_rate(o)},
                      {"rl_steps", o.rl_steps},
                      {"rl_learning_rate", rl_learning_rate(o)},
                      {"max_new_tokens", max_new_tokens(o)},
                      {"learned", r.learning_failure.empty()},
                      {"learning_failure", r.learning_failure},
                      {"points", nlohmann::json::array()},
                      {"stage_seconds", nlohmann::json::object()}};
  for (const auto& p : r.points) j["points"].push_back(point_json(p));
  for (const auto& [stage, s] : r.stage_seconds) j["stage_seconds"][stage] = s;
  return j;
}

std::string html_report(const QuickstartResult& r, const std::string& table) {
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset=\"utf-8\"><title>musacoder quickstart</title></head><body>"
    << "<h1>musacoder quickstart</h1><p>" << r.train_pairs << " verified training pairs; " << r.heldout
    << " held-out tasks (overlaps with training: " << r.overlaps << ").</p><pre>" << table << "</pre>"
    << "<img src=\"curves.png\" alt=\"training curves\" style=\"max-width:100%\"><h2>Evaluations</h2><ul>";
  for (const auto& p : r.points)
    h << "<li><a href=\"" << fs::relative(p.report, r.report.parent_path()).string() << "\">" << p.stage
      << "</a></li>";
  h << "</ul></body></html>\n";
  return h.str();
}

}  // namespace

std::string format_table(const QuickstartResult& r) {
  std::string t = "held-out tasks, first turn    Pass@1   Pass@k   Avg@k   fast_1   seconds\n";
  char line[160];
  for (const auto& p : r.points) {
    std::snprintf(line, sizeof line, "%-28s %6.1f%% %7.1f%% %6.1f%% %7.1f%% %9.0f\n", p.stage.c_str(),
                  100 * p.pass_at_1, 100 * p.pass_at_k, 100 * p.avg_at_k, 100 * p.fast_1, p.seconds);
    t += line;
  }
  return t;
}

Status write_outputs(const QuickstartOptions& o, QuickstartResult& r, const fs::path& sft_run,
                     const fs::path& rl_run) {
  r.summary = o.out_dir / "summary.json";
  r.curves = o.out_dir / "curves.png";
  r.report = o.out_dir / "report.html";
  MC_RETURN_IF_ERROR(write_file_atomic(r.summary, summary_json(o, r).dump(2) + "\n"));
  MC_RETURN_IF_ERROR(write_file_atomic(r.report, html_report(r, format_table(r))));
  ProcessOptions p;
  p.argv = {"python3",
            "-c",
            kCurvesScript,
            r.curves.string(),
            (sft_run / "metrics.jsonl").string(),
            (rl_run / "metrics.jsonl").string(),
            r.summary.string()};
  p.deadline = std::chrono::seconds(120);
  auto plot = run_process(p);
  if (!plot.ok()) return plot.status();
  if (!plot->succeeded())
    return unavailable("curves.png: matplotlib (python3) failed: " + plot->describe() + "\n" +
                       plot->stderr_text);
  return Status::ok_status();
}

}  // namespace musacoder::quickstart
