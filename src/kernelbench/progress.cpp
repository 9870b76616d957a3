#include "kernelbench/progress.h"

#include <cstdio>

namespace musacoder::kernelbench {

std::string format_duration(double s) {
  char buf[32];
  const long t = s < 0 ? 0 : static_cast<long>(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

std::string progress_line(const ProgressCounts& c, const nlohmann::json& overall, int k) {
  auto metric = [&](const char* name) -> std::string {
    if (!overall.is_object() || !overall.contains(name) || !overall[name].is_object()) return "-";
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.3f", overall[name]["mean"].get<double>());
    return buf;
  };
  std::string eta = "?";
  if (c.done_here > 0 && c.todo_here >= c.done_here)
    eta = format_duration(c.elapsed_seconds / static_cast<double>(c.done_here) * static_cast<double>(c.todo_here - c.done_here));
  const double pct = c.samples_total ? 100.0 * static_cast<double>(c.samples_done) / static_cast<double>(c.samples_total) : 100.0;
  const long infra = overall.is_object() ? overall.value("infra", 0L) : 0L;
  char buf[320];
  std::snprintf(buf, sizeof buf, "eval-model  %zu/%zu samples (%.0f%%)  tasks %zu/%zu  pass@1 %s  pass@%d %s  infra %ld  elapsed %s  ETA %s",
                c.samples_done, c.samples_total, pct, c.tasks_done, c.tasks_total, metric("pass_at_1").c_str(), k,
                metric("pass_at_k").c_str(), infra, format_duration(c.elapsed_seconds).c_str(), eta.c_str());
  return buf;
}

}  // namespace musacoder::kernelbench
