// Prometheus metrics of the service, rendered in the text exposition format (0.0.4).
//
// Counters and histograms live here; gauges that are facts of the store or the queue
// (queue depth, jobs by state, worker count) are read when /metrics is scraped and passed
// to render(). Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace musacoder::service {

// A cumulative histogram with fixed upper bounds (seconds), as Prometheus expects:
// bucket i counts observations ≤ bounds[i]; +Inf is implied.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // "<name>_bucket{<labels>le="..."} n" lines plus _sum and _count; `labels` is either
  // empty or 'key="value",' (with the trailing comma).
  std::string render(const std::string& name, const std::string& labels) const;
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> buckets_;  // per bound, not cumulative; cumulated in render()
  uint64_t count_ = 0;
  double sum_ = 0;
};

struct Gauges {
  int64_t queue_depth = 0;  // jobs queued, not yet started
  int64_t running = 0;      // jobs being evaluated
  int64_t done = 0, cancelled = 0;
  int64_t workers = 0;  // evaluation slots that are alive (threads or fleet workers)
};

class ServiceMetrics {
 public:
  ServiceMetrics();

  // A verdict was committed: counts it by class and records its stage latencies and
  // cache use. `verdict` is the verdict JSON (schema mooreeval.verdict/1).
  void record_verdict(const nlohmann::json& verdict);
  void record_duplicate_result();
  void record_reclaim();
  void record_submitted(std::size_t jobs);
  // One HTTP request: route pattern (e.g. "/v1/jobs/{id}"), status code, seconds.
  void record_request(const std::string& route, int status, double seconds);

  std::string render(const Gauges& gauges) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> verdicts_;                  // class -> count
  std::map<std::string, Histogram> stage_seconds_;            // stage -> histogram
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (route, status) -> count
  std::map<std::string, Histogram> request_seconds_;          // route -> histogram
  uint64_t cache_hits_ = 0, cache_misses_ = 0, duplicates_ = 0, reclaims_ = 0, submitted_ = 0;
};

// Prometheus label value escaping (backslash, quote, newline).
std::string escape_label(const std::string& value);

}  // namespace musacoder::service
