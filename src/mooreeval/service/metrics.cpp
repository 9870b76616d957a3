#include "mooreeval/service/metrics.h"

#include <algorithm>
#include <sstream>

#include "core/check.h"

namespace musacoder::service {

namespace {

// Stage latencies: format errors take milliseconds, CPU builds tens of seconds.
const std::vector<double> kStageBounds = {0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1,  2.5,
                                          5,     10,    20,   30,   60,  120,  300, 600};
// HTTP handling: status queries take tens of microseconds, synchronous evaluations minutes.
const std::vector<double> kRequestBounds = {0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1,
                                            0.5,    1,      5,     30,    120,  600};
const char* const kStages[] = {"extract", "inspect", "build", "run", "benchmark", "total"};

std::string fmt(double v) {
  std::ostringstream o;
  o.precision(12);
  o << v;
  return o.str();
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), buckets_(bounds_.size(), 0) {
  MC_CHECK(std::is_sorted(bounds_.begin(), bounds_.end()));
}

void Histogram::observe(double value) {
  auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  if (it != bounds_.end()) buckets_[static_cast<std::size_t>(it - bounds_.begin())]++;
  count_++;
  sum_ += value;
}

std::string Histogram::render(const std::string& name, const std::string& labels) const {
  std::ostringstream o;
  uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += buckets_[i];
    o << name << "_bucket{" << labels << "le=\"" << fmt(bounds_[i]) << "\"} " << cumulative << "\n";
  }
  o << name << "_bucket{" << labels << "le=\"+Inf\"} " << count_ << "\n";
  std::string plain = labels.empty() ? "" : "{" + labels.substr(0, labels.size() - 1) + "}";
  o << name << "_sum" << plain << " " << fmt(sum_) << "\n";
  o << name << "_count" << plain << " " << count_ << "\n";
  return o.str();
}

std::string escape_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

ServiceMetrics::ServiceMetrics() {
  for (const char* s : kStages) stage_seconds_.emplace(s, Histogram(kStageBounds));
  for (const char* v : {"ok", "format_error", "compile_error", "runtime_error", "timeout", "wrong_answer",
                        "illegal", "infra_error"})
    verdicts_[v] = 0;
}

void ServiceMetrics::record_verdict(const nlohmann::json& verdict) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string cls = verdict.value("verdict", std::string("unknown"));
  verdicts_[cls]++;
  if (auto it = verdict.find("seconds"); it != verdict.end() && it->is_object()) {
    for (const char* s : kStages) {
      auto v = it->find(s);
      // A stage that did not run reports 0 s; only stages that ran are latency samples.
      if (v != it->end() && v->is_number() && v->get<double>() > 0)
        stage_seconds_.at(s).observe(v->get<double>());
    }
  }
  // The cache only matters for candidates that reached the build stage.
  if (verdict.value("compiled", false)) {
    if (verdict.value("cache_hit", false))
      cache_hits_++;
    else
      cache_misses_++;
  }
}

void ServiceMetrics::record_duplicate_result() {
  std::lock_guard<std::mutex> lock(mu_);
  duplicates_++;
}

void ServiceMetrics::record_reclaim() {
  std::lock_guard<std::mutex> lock(mu_);
  reclaims_++;
}

void ServiceMetrics::record_submitted(std::size_t jobs) {
  std::lock_guard<std::mutex> lock(mu_);
  submitted_ += jobs;
}

void ServiceMetrics::record_request(const std::string& route, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  requests_[{route, status}]++;
  request_seconds_.try_emplace(route, kRequestBounds).first->second.observe(seconds);
}

std::string ServiceMetrics::render(const Gauges& g) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream o;
  o << "# HELP mooreeval_queue_depth Jobs queued and not yet started.\n# TYPE mooreeval_queue_depth gauge\n"
    << "mooreeval_queue_depth " << g.queue_depth << "\n";
  o << "# HELP mooreeval_jobs Jobs in the store by state.\n# TYPE mooreeval_jobs gauge\n"
    << "mooreeval_jobs{state=\"queued\"} " << g.queue_depth << "\n"
    << "mooreeval_jobs{state=\"running\"} " << g.running << "\n"
    << "mooreeval_jobs{state=\"done\"} " << g.done << "\n"
    << "mooreeval_jobs{state=\"cancelled\"} " << g.cancelled << "\n";
  o << "# HELP mooreeval_workers Evaluation workers alive (threads, or fleet workers with a fresh "
       "heartbeat).\n"
    << "# TYPE mooreeval_workers gauge\nmooreeval_workers " << g.workers << "\n";
  o << "# HELP mooreeval_jobs_submitted_total Jobs accepted since start.\n"
    << "# TYPE mooreeval_jobs_submitted_total counter\nmooreeval_jobs_submitted_total " << submitted_ << "\n";
  o << "# HELP mooreeval_verdicts_total Results stored since start, by verdict class.\n"
    << "# TYPE mooreeval_verdicts_total counter\n";
  for (const auto& [cls, n] : verdicts_)
    o << "mooreeval_verdicts_total{verdict=\"" << escape_label(cls) << "\"} " << n << "\n";
  o << "# HELP mooreeval_duplicate_results_total Results ignored because the job already had one.\n"
    << "# TYPE mooreeval_duplicate_results_total counter\nmooreeval_duplicate_results_total " << duplicates_
    << "\n";
  o << "# HELP mooreeval_reclaims_total Jobs taken over from a dead or stuck worker.\n"
    << "# TYPE mooreeval_reclaims_total counter\nmooreeval_reclaims_total " << reclaims_ << "\n";
  o << "# HELP mooreeval_build_cache_total Builds of compiled candidates by cache outcome.\n"
    << "# TYPE mooreeval_build_cache_total counter\n"
    << "mooreeval_build_cache_total{outcome=\"hit\"} " << cache_hits_ << "\n"
    << "mooreeval_build_cache_total{outcome=\"miss\"} " << cache_misses_ << "\n";
  const uint64_t builds = cache_hits_ + cache_misses_;
  o << "# HELP mooreeval_build_cache_hit_ratio Share of compiled candidates served from the cache.\n"
    << "# TYPE mooreeval_build_cache_hit_ratio gauge\nmooreeval_build_cache_hit_ratio "
    << fmt(builds ? static_cast<double>(cache_hits_) / static_cast<double>(builds) : 0.0) << "\n";
  o << "# HELP mooreeval_stage_seconds Evaluation stage latency.\n# TYPE mooreeval_stage_seconds histogram\n";
  for (const auto& [stage, h] : stage_seconds_)
    o << h.render("mooreeval_stage_seconds", "stage=\"" + escape_label(stage) + "\",");
  o << "# HELP mooreeval_http_requests_total HTTP requests by route and status.\n"
    << "# TYPE mooreeval_http_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    o << "mooreeval_http_requests_total{route=\"" << escape_label(key.first) << "\",status=\"" << key.second
      << "\"} " << n << "\n";
  o << "# HELP mooreeval_http_request_seconds HTTP request handling time by route.\n"
    << "# TYPE mooreeval_http_request_seconds histogram\n";
  for (const auto& [route, h] : request_seconds_)
    o << h.render("mooreeval_http_request_seconds", "route=\"" + escape_label(route) + "\",");
  return o.str();
}

}  // namespace musacoder::service
