// report_html (report.h): one offline page, inline CSS and SVG, no scripts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "kernelbench/report.h"

namespace musacoder::kernelbench {
using nlohmann::json;

namespace {

const std::map<std::string, std::string>& colours() {
  static const std::map<std::string, std::string> c = {
      {"ok", "#2e7d32"},          {"wrong_answer", "#e65100"}, {"compile_error", "#c62828"},
      {"runtime_error", "#ad1457"}, {"timeout", "#6a1b9a"},    {"format_error", "#5d4037"},
      {"illegal", "#000000"},     {"infra_error", "#9e9e9e"},  {"missing", "#e0e0e0"}};
  return c;
}

std::string colour(const std::string& verdict) {
  auto it = colours().find(verdict);
  return it == colours().end() ? "#607d8b" : it->second;
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

double mean_of(const json& interval) { return interval.is_object() ? interval["mean"].get<double>() : 0.0; }

// Bars of `values` (0..1) per group, three series.
std::string pass_by_level_svg(const json& view, int k) {
  const char* series[] = {"pass_at_1", "pass_at_k", "avg_at_k"};
  const std::string names[] = {"Pass@1", "Pass@" + std::to_string(k), "Avg@" + std::to_string(k)};
  const char* fills[] = {"#90caf9", "#1565c0", "#ffb74d"};
  const int group_w = 120, h = 160, top = 20;
  std::string s = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(60 + group_w * static_cast<int>(view.size())) +
                  "' height='" + std::to_string(h + 66) + "'>";  // the legend's descenders too
  int gi = 0;
  for (auto& [name, g] : view.items()) {
    const int x0 = 40 + gi++ * group_w;
    for (int i = 0; i < 3; ++i) {
      const double v = mean_of(g[series[i]]);
      const int bh = static_cast<int>(v * h);
      s += "<rect x='" + std::to_string(x0 + i * 30) + "' y='" + std::to_string(top + h - bh) + "' width='26' height='" +
           std::to_string(bh) + "' fill='" + fills[i] + "'><title>" + name + " " + names[i] + " " + fmt("%.1f%%", 100 * v) +
           "</title></rect><text x='" + std::to_string(x0 + i * 30 + 13) + "' y='" + std::to_string(top + h - bh - 3) +
           "' font-size='9' text-anchor='middle'>" + fmt("%.0f", 100 * v) + "</text>";
    }
    s += "<text x='" + std::to_string(x0 + 45) + "' y='" + std::to_string(top + h + 15) +
         "' font-size='12' text-anchor='middle'>" + html_escape(name) + "</text>";
  }
  for (int i = 0; i < 3; ++i)
    s += "<rect x='" + std::to_string(40 + i * 90) + "' y='" + std::to_string(top + h + 30) + "' width='10' height='10' fill='" +
         fills[i] + "'/><text x='" + std::to_string(54 + i * 90) + "' y='" + std::to_string(top + h + 39) +
         "' font-size='11'>" + names[i] + "</text>";
  return s + "<line x1='36' y1='" + std::to_string(top + h) + "' x2='" + std::to_string(40 + group_w * static_cast<int>(view.size())) +
         "' y2='" + std::to_string(top + h) + "' stroke='#333'/></svg>";
}

// Histogram of log2(speedup) of the correct samples, bins of 0.5 from <= -3 to >= 3.
std::string speedup_svg(const json& speedups) {
  const int bins = 13;
  std::vector<int> count(bins, 0);
  for (const auto& x : speedups) {
    const double l = std::log2(x.get<double>());
    const int b = std::clamp(static_cast<int>(std::floor((l + 3.25) / 0.5)), 0, bins - 1);
    ++count[static_cast<std::size_t>(b)];
  }
  int most = 1;
  for (int c : count) most = std::max(most, c);
  const int h = 140, w = 36;
  std::string s = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(40 + bins * w) + "' height='" +
                  std::to_string(h + 50) + "'>";
  for (int b = 0; b < bins; ++b) {
    const int bh = count[static_cast<std::size_t>(b)] * h / most;
    const double centre = std::pow(2.0, -3.0 + 0.5 * b);
    s += "<rect x='" + std::to_string(30 + b * w) + "' y='" + std::to_string(10 + h - bh) + "' width='" + std::to_string(w - 4) +
         "' height='" + std::to_string(bh) + "' fill='" + (centre >= 1.0 ? "#2e7d32" : "#ef6c00") + "'><title>" +
         std::to_string(count[static_cast<std::size_t>(b)]) + " samples near " + fmt("%.2fx", centre) + "</title></rect>";
    s += "<text x='" + std::to_string(30 + b * w + w / 2) + "' y='" + std::to_string(h + 25) +
         "' font-size='9' text-anchor='middle'>" + fmt("%.2g", centre) + "</text>";
  }
  return s + "<text x='30' y='" + std::to_string(h + 42) + "' font-size='11'>speedup over eager (log scale), " +
         std::to_string(speedups.size()) + " correct samples</text></svg>";
}

std::string verdicts_svg(const json& verdicts) {
  int most = 1;
  for (auto& [k, n] : verdicts.items()) most = std::max(most, n.get<int>());
  std::string s = "<svg xmlns='http://www.w3.org/2000/svg' width='520' height='" + std::to_string(20 + 22 * static_cast<int>(verdicts.size())) + "'>";
  int row = 0;
  for (auto& [cls, n] : verdicts.items()) {
    const int y = 10 + 22 * row++;
    s += "<text x='110' y='" + std::to_string(y + 13) + "' font-size='12' text-anchor='end'>" + html_escape(cls) + "</text>";
    s += "<rect x='116' y='" + std::to_string(y) + "' width='" + std::to_string(n.get<int>() * 340 / most) + "' height='16' fill='" +
         colour(cls) + "'/><text x='" + std::to_string(122 + n.get<int>() * 340 / most) + "' y='" + std::to_string(y + 13) +
         "' font-size='11'>" + std::to_string(n.get<int>()) + "</text>";
  }
  return s + "</svg>";
}

std::string sample_details(const std::vector<TurnRecord>* turns) {
  if (!turns) return "<p>not run</p>";
  std::string s;
  for (const auto& r : *turns) {
    const std::string v = r.verdict.value("verdict", std::string("?"));
    s += "<h4>turn " + std::to_string(r.turn) + ": <span style='color:" + colour(v) + "'>" + html_escape(v) + "</span> " +
         html_escape(r.verdict.value("message", std::string())) + (r.infra.empty() ? "" : " (infra: " + html_escape(r.infra) + ")") +
         "</h4><details><summary>response</summary><pre>" + html_escape(r.response) +
         "</pre></details><details><summary>verdict</summary><pre>" +
         html_escape(r.verdict.dump(2, ' ', false, json::error_handler_t::replace)) + "</pre></details>";
  }
  return s;
}

std::string task_grid(const json& tasks, const Chains& chains) {
  std::string s;
  for (const auto& t : tasks) {
    const std::string id = t["id"].get<std::string>();
    std::string cells;
    for (const auto& smp : t["samples"]) {
      const std::string v = smp["verdict"].get<std::string>();
      cells += "<span class='cell' style='background:" + colour(v) + "' title='sample " + std::to_string(smp["sample"].get<int>()) +
               ": " + v + (smp["speedup"].is_number() ? fmt(" %.2fx", smp["speedup"].get<double>()) : "") + "'></span>";
    }
    s += "<details class='task'><summary><code>" + html_escape(id) + "</code> " + cells + "</summary>";
    for (const auto& smp : t["samples"]) {
      const int n = smp["sample"].get<int>();
      auto it = chains.find({id, n});
      s += "<details class='sample'><summary>sample " + std::to_string(n) + ": " + html_escape(smp["verdict"].get<std::string>()) +
           "</summary>" + sample_details(it == chains.end() ? nullptr : &it->second) + "</details>";
    }
    s += "</details>\n";
  }
  return s;
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string report_html(const json& summary, const Chains& chains) {
  const json& best = summary["views"]["best"];
  const int k = summary.value("k", 8);
  std::string s = "<!DOCTYPE html><html><head><meta charset='utf-8'><title>eval-model " +
                  html_escape(summary["suite"]["id"].get<std::string>()) + "</title><style>"
                  "body{font-family:sans-serif;margin:2em;max-width:1200px}pre{background:#f5f5f5;padding:.5em;overflow:auto;max-height:30em}"
                  ".cell{display:inline-block;width:12px;height:12px;margin:0 1px;vertical-align:middle}"
                  ".task summary{cursor:pointer;padding:2px}.sample{margin-left:2em}table{border-collapse:collapse}"
                  "td,th{border:1px solid #ccc;padding:2px 6px}</style></head><body>";
  s += "<h1>eval-model: " + html_escape(summary["suite"]["id"].get<std::string>()) + "</h1><p>" +
       html_escape(summary.value("run", json::object()).value("model", std::string())) + " &middot; scorer " +
       html_escape(summary.value("run", json::object()).value("scorer", std::string())) + " &middot; suite hash <code>" +
       html_escape(summary["suite"]["content_hash"].get<std::string>().substr(0, 16)) + "</code></p>";
  s += "<h2>Summary</h2><pre>" + html_escape(summary_markdown(summary)) + "</pre>";
  s += "<h2>Pass rate by level (best of turns)</h2>" + pass_by_level_svg(best, k);
  s += "<h2>Speedup distribution</h2>" + speedup_svg(best["overall"]["speedups"]);
  s += "<h2>Verdict classes</h2>" + verdicts_svg(best["overall"]["verdicts"]);
  s += "<h2>Tasks</h2><p>One square per sample (best of turns); open a task for its samples' code and verdicts.</p>" +
       task_grid(summary["tasks"], chains);
  return s + "</body></html>\n";
}

}  // namespace musacoder::kernelbench
