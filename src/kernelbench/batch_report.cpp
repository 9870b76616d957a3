#include "kernelbench/batch_report.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/text.h"
#include "kernelbench/metrics.h"

namespace musacoder::kernelbench {

using nlohmann::json;

namespace {

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

}  // namespace

std::string path_text(const std::filesystem::path& path) {
  const std::string& s = path.native();
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 0;
    for (std::size_t n = 1; n <= 4 && i + n <= s.size() && !len; ++n)
      if (is_valid_utf8(std::string_view(s).substr(i, n))) len = n;
    if (len) {
      out.append(s, i, len);
      i += len;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(s[i]));
      out += buf;
      ++i;
    }
  }
  return out;
}

std::string safe_dump(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

json summarize_batch(const std::vector<mooreeval::Verdict>& verdicts) {
  std::map<std::string, std::vector<SampleOutcome>> by_task;
  std::map<std::string, int> counts;
  int infra = 0;
  double reward_sum = 0;
  int scored = 0;
  for (const auto& v : verdicts) {
    counts[mooreeval::verdict_name(v.verdict)]++;
    if (!v.scored()) {
      ++infra;
      continue;
    }
    ++scored;
    reward_sum += v.reward.total;
    const bool correct = v.verdict == mooreeval::VerdictClass::kOk;
    by_task[v.task_id].push_back({correct, correct && v.speedup && *v.speedup > 0 ? *v.speedup : 1e-9});
  }
  json out = {{"samples", verdicts.size()},
              {"problems", by_task.size()},
              {"verdicts", counts},
              {"infra_errors", infra},
              {"mean_reward", scored ? reward_sum / scored : 0.0}};
  std::vector<std::vector<SampleOutcome>> problems;
  std::size_t min_n = SIZE_MAX;
  for (auto& [id, s] : by_task) {
    min_n = std::min(min_n, s.size());
    problems.push_back(s);
  }
  if (problems.empty()) return out;
  json pass = json::object();
  for (std::size_t k = 1; k <= min_n; k *= 2) {
    auto s = summarize(problems, {k, 1.0});
    if (s.ok()) pass[std::to_string(k)] = s.value().pass_at_k;
  }
  out["pass_at_k"] = pass;
  json fast = json::object();
  for (double p : {0.0, 0.8, 1.0, 1.5, 2.0}) {
    auto s = summarize(problems, {1, p});
    if (s.ok()) fast[fmt("%g", p)] = s.value().fast_p;
  }
  out["fast_p"] = fast;
  auto s = summarize(problems, {1, 1.0});
  if (s.ok()) {
    out["avg_at_k"] = s.value().avg_at_k;
    out["geomean_speedup"] = s.value().geomean_speedup ? json(*s.value().geomean_speedup) : json(nullptr);
  }
  return out;
}

std::string verdict_table(const std::vector<LabelledVerdict>& rows) {
  std::size_t w = 10;
  for (const auto& r : rows) w = std::max(w, r.label.size());
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-*s  %-13s  %6s  %7s  %9s  %9s  %7s  %6s  %s\n", static_cast<int>(w),
                "candidate", "verdict", "reward", "pass", "ref ms", "cand ms", "speedup", "build", "message");
  out += line;
  out += std::string(w + 90, '-') + "\n";
  for (const auto& r : rows) {
    const auto& v = *r.verdict;
    std::string message = v.message.substr(0, 70);
    std::replace(message.begin(), message.end(), '\n', ' ');
    std::snprintf(line, sizeof line, "%-*s  %-13s  %6s  %3d/%-3d  %9s  %9s  %7s  %5.1fs  %s\n",
                  static_cast<int>(w), r.label.c_str(), mooreeval::verdict_name(v.verdict),
                  v.scored() ? fmt("%.3f", v.reward.total).c_str() : "-", v.passed, v.trials,
                  v.reference_time ? fmt("%.3f", v.reference_time->median_ms).c_str() : "-",
                  v.candidate_time ? fmt("%.3f", v.candidate_time->median_ms).c_str() : "-",
                  v.speedup ? fmt("%.2fx", *v.speedup).c_str() : "-", v.seconds.build, message.c_str());
    out += line;
  }
  return out;
}

}  // namespace musacoder::kernelbench
