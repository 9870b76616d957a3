// musacoder plot RUN_DIR [--out FILE.png]: the training curves of a run (RUN_DIR/metrics.jsonl) as one PNG —
// loss (train and eval), learning rate, gradient norm, tokens/s. Rendered by matplotlib in a python3 child: no
// C++ plotting library is packaged for Debian that would draw labelled axes without a GUI stack, and plotting is
// not on any training path. The metrics are read here, so a damaged file fails with its line number.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "command.h"
#include "commands.h"
#include "process/subprocess.h"

namespace musacoder::tool {
namespace {

struct PlotFlags {
  std::string run_dir, out;
};

constexpr const char* kPlotScript = R"PY(
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
series = json.load(sys.stdin)
panels = [("loss", ["train/loss", "eval/loss"]), ("learning rate", ["train/lr"]),
          ("gradient norm", ["train/grad_norm"]), ("tokens/s", ["train/tokens_per_second"])]
fig, axes = plt.subplots(2, 2, figsize=(11, 7))
for ax, (title, keys) in zip(axes.flat, panels):
    for k in keys:
        if k in series and series[k]["step"]:
            ax.plot(series[k]["step"], series[k]["value"], label=k.split("/")[0], marker="." if k.startswith("eval") else None)
    ax.set_title(title); ax.set_xlabel("step"); ax.grid(alpha=0.3)
    if len(keys) > 1: ax.legend()
fig.suptitle(sys.argv[2]); fig.tight_layout(); fig.savefig(sys.argv[1], dpi=110)
)PY";

// {"<split>/<name>": {"step": [...], "value": [...]}}, the last record of a step winning (a resumed run
// re-logs the steps after its checkpoint).
Result<nlohmann::json> read_series(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return not_found(file.string() + " does not exist (is this a train-sft run directory?)");
  std::map<std::string, std::map<int64_t, double>> by;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("step")) {
      return invalid_argument(file.string() + ":" + std::to_string(n) + ": not a metrics record");
    }
    const std::string split = j.value("split", "train");
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.value().is_number() && it.key() != "step") by[split + "/" + it.key()][j["step"].get<int64_t>()] = it.value().get<double>();
    }
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, points] : by) {
    for (const auto& [step, value] : points) {
      out[key]["step"].push_back(step);
      out[key]["value"].push_back(value);
    }
  }
  if (out.empty()) return invalid_argument(file.string() + " holds no metrics yet");
  return out;
}

int run_plot(const PlotFlags& f) {
  const std::filesystem::path run(f.run_dir);
  auto series = read_series(run / "metrics.jsonl");
  if (!series.ok()) return fail("plot", series.status());
  const std::string out = f.out.empty() ? (run / "curves.png").string() : f.out;
  ProcessOptions p;
  p.argv = {"python3", "-c", kPlotScript, out, run.filename().string()};
  p.stdin_data = series->dump();
  p.deadline = std::chrono::seconds(120);
  auto r = run_process(p);
  if (!r.ok()) return fail("plot", r.status());
  if (!r->succeeded()) {
    return fail("plot", unavailable("matplotlib (python3) failed: " + r->describe() + "\n" + r->stderr_text));
  }
  std::printf("%s\n", out.c_str());
  return 0;
}

}  // namespace

Command add_plot_command(CLI::App& app) {
  auto flags = std::make_shared<PlotFlags>();
  CLI::App* sub = app.add_subcommand("plot", "render a training run's curves (metrics.jsonl) to PNG");
  sub->add_option("run_dir", flags->run_dir, "the run's --output-dir")->required();
  sub->add_option("--out", flags->out, "PNG path (default RUN_DIR/curves.png)");
  return {sub, [flags] { return run_plot(*flags); }};
}

}  // namespace musacoder::tool
