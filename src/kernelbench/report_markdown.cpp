// summary_markdown and compare_markdown (report.h).
#include <cstdio>

#include "kernelbench/aggregate.h"
#include "kernelbench/report.h"

namespace musacoder::kernelbench {
using nlohmann::json;

namespace {

std::string pct(const json& interval, bool with_ci = true) {
  if (!interval.is_object()) return "-";
  char buf[64];
  if (with_ci)
    std::snprintf(buf, sizeof buf, "%.1f%% [%.1f, %.1f]", 100 * interval["mean"].get<double>(),
                  100 * interval["low"].get<double>(), 100 * interval["high"].get<double>());
  else
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * interval["mean"].get<double>());
  return buf;
}

std::string num(const json& x, const char* f = "%.2fx") {
  if (!x.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, f, x.get<double>());
  return buf;
}

json fast(const json& g, double p) { return g["fast_p"].value(fast_p_key(p), json()); }

std::string paper_table(const json& view, int k) {
  std::string s = "| level | tasks | Pass@1 | Pass@" + std::to_string(k) + " | Avg@" + std::to_string(k) +
                  " | Faster>1.1x | geomean speedup | infra |\n|---|---|---|---|---|---|---|---|\n";
  for (auto& [name, g] : view.items()) {
    if (name == "overall") continue;
    s += "| " + name + " | " + std::to_string(g["tasks"].get<int>()) + " | " + pct(g["pass_at_1"]) + " | " +
         pct(g["pass_at_k"]) + " | " + pct(g["avg_at_k"]) + " | " + pct(fast(g, 1.1)) + " | " +
         num(g["geomean_speedup"]) + " | " + std::to_string(g["infra"].get<int>()) + " |\n";
  }
  const json& g = view["overall"];
  s += "| **overall** | " + std::to_string(g["tasks"].get<int>()) + " | " + pct(g["pass_at_1"]) + " | " +
       pct(g["pass_at_k"]) + " | " + pct(g["avg_at_k"]) + " | " + pct(fast(g, 1.1)) + " | " +
       num(g["geomean_speedup"]) + " | " + std::to_string(g["infra"].get<int>()) + " |\n";
  return s;
}

std::string fast_p_table(const json& view) {
  std::string s = "| level |";
  for (double p : kFastP) s += " fast_" + fast_p_key(p) + " |";
  s += "\n|---|";
  for (std::size_t i = 0; i < std::size(kFastP); ++i) s += "---|";
  s += "\n";
  for (auto& [name, g] : view.items()) {
    s += "| " + name + " |";
    for (double p : kFastP) s += " " + pct(fast(g, p), false) + " |";
    s += "\n";
  }
  return s;
}

std::string verdict_lines(const json& overall) {
  std::string s;
  for (auto& [cls, n] : overall["verdicts"].items()) s += "- " + cls + ": " + std::to_string(n.get<int>()) + "\n";
  return s.empty() ? "- (none yet)\n" : s;
}

// Where the run's time went: its wall clock (the last session of a resumed run) and, per turn, generation
// (submission to last token) and verification. Turns run concurrently, so the sums exceed the wall.
std::string time_lines(const json& time, const json& run) {
  if (time.empty()) return "";
  auto secs = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f s", v);
    return std::string(buf);
  };
  const json &g = time["generate_seconds"], &v = time["verify_seconds"];
  std::string s = "## Time\n\n";
  if (run.contains("wall_seconds_last_session"))
    s += "- wall (this session of the run): " + secs(run["wall_seconds_last_session"].get<double>()) + "\n";
  s += "- per turn (" + std::to_string(time["turns"].get<int64_t>()) + " turns): generation median " +
       secs(g["median"].get<double>()) + ", max " + secs(g["max"].get<double>()) + "; verification median " +
       secs(v["median"].get<double>()) + ", max " + secs(v["max"].get<double>()) + "\n";
  s += "- summed over turns (they overlap): generation " + secs(g["sum"].get<double>()) + ", verification " +
       secs(v["sum"].get<double>()) + "\n\n";
  return s;
}

}  // namespace

std::string summary_markdown(const json& summary) {
  const int k = summary.value("k", 8), turns = summary.value("turns", 1);
  const json& views = summary["views"];
  const json& run = summary.value("run", json::object());
  std::string s = "# eval-model: " + summary["suite"]["id"].get<std::string>() + "\n\n";
  s += "Model: " + run.value("model", std::string("?")) + ". Scorer: " + run.value("scorer", std::string("?")) +
       ". Suite hash `" + summary["suite"]["content_hash"].get<std::string>().substr(0, 16) + "`.\n\n";
  s += "## " + std::string(turns > 1 ? "Best of " + std::to_string(turns) + " turns" : "Results") +
       " (mean over tasks, 95% interval over tasks)\n\n" + paper_table(views["best"], k) + "\n";
  if (turns > 1)
    for (int t = 1; t <= turns; ++t)
      s += "### After turn " + std::to_string(t) + "\n\n" + paper_table(views["turn" + std::to_string(t)], k) + "\n";
  s += "## fast_p (share of samples correct and faster than p x eager)\n\n" + fast_p_table(views["best"]) + "\n";
  s += "## Verdict classes (best of turns)\n\n" + verdict_lines(views["best"]["overall"]) + "\n";
  const json& infra = summary["infra"];
  s += "## Infrastructure failures (not scored)\n\n- generation: " + std::to_string(infra["generation"].get<int>()) +
       "\n- verifier: " + std::to_string(infra["verifier"].get<int>()) + "\n\n";
  s += time_lines(summary.value("time", json::object()), run);
  s += "## Unloadable tasks (" + std::to_string(summary["suite"]["unloadable"].size()) + ")\n\n";
  for (const auto& u : summary["suite"]["unloadable"])
    s += "- `" + u["id"].get<std::string>() + "`: " + u["error"].get<std::string>() + "\n";
  s += "\n## Protocol\n\n```json\n" + run.value("protocol", json::object()).dump(2) + "\n```\n";
  return s;
}

std::string compare_markdown(const json& a, const json& b, const std::string& name_a, const std::string& name_b) {
  std::string s = "# compare: A = " + name_a + ", B = " + name_b + "\n\n";
  if (a["suite"]["content_hash"] != b["suite"]["content_hash"])
    s += "**Warning: the runs used different suites** (" + a["suite"]["id"].get<std::string>() + " vs " +
         b["suite"]["id"].get<std::string>() + "): numbers are not comparable task for task.\n\n";
  const json pa = a.value("run", json::object()).value("protocol", json::object());
  const json pb = b.value("run", json::object()).value("protocol", json::object());
  for (auto& [key, v] : pa.items())
    if (pb.value(key, json()) != v && key != "suite_id" && key != "suite_hash")
      s += "- protocol differs: " + key + " A=" + v.dump() + " B=" + pb.value(key, json()).dump() + "\n";
  s += "\n| view | group | Pass@1 A | Pass@1 B | Pass@k A | Pass@k B | Avg@k A | Avg@k B | fast_1.1 A | fast_1.1 B | geomean A | geomean B |\n";
  s += "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (auto& [view, groups] : a["views"].items()) {
    for (auto& [group, ga] : groups.items()) {
      const json gb = b["views"].value(view, json::object()).value(group, json());
      auto cell = [&](const json& g, const char* m) { return g.is_object() ? pct(g[m], false) : "-"; };
      auto fcell = [&](const json& g) { return g.is_object() ? pct(fast(g, 1.1), false) : "-"; };
      auto gcell = [&](const json& g) { return g.is_object() ? num(g["geomean_speedup"]) : "-"; };
      s += "| " + view + " | " + group + " | " + cell(ga, "pass_at_1") + " | " + cell(gb, "pass_at_1") + " | " +
           cell(ga, "pass_at_k") + " | " + cell(gb, "pass_at_k") + " | " + cell(ga, "avg_at_k") + " | " +
           cell(gb, "avg_at_k") + " | " + fcell(ga) + " | " + fcell(gb) + " | " + gcell(ga) + " | " + gcell(gb) + " |\n";
    }
  }
  return s;
}

}  // namespace musacoder::kernelbench
