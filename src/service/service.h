// The MooreEval service: the store, a queue (in-process or Redis), local worker threads
// and the operations behind the HTTP API (api.h). One Service per server process; it is
// the only writer of its SQLite database.
//
// Thread-safety: every public method may be called from any thread once start() has
// returned ok; stop() must not race with start().
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/evaluator.h"
#include "service/memory_queue.h"
#include "service/metrics.h"
#include "service/redis_queue.h"
#include "service/request.h"
#include "service/store.h"
#include "service/worker.h"

namespace musacoder::service {

struct ServiceOptions {
  std::filesystem::path tasks_dir;  // the suite jobs may name (ids only; no paths from clients)
  StoreOptions store;               // --db
  ServiceLimits limits;             // request limits
  std::string queue_url;            // --queue redis://HOST:PORT; empty: in-process queue
  RedisQueueOptions redis;          // Redis keys and timeouts (url is taken from queue_url)
  WorkerOptions workers;            // local evaluation threads (--workers; 0 only with a Redis queue)
};

class Service final : public ResultSink {
 public:
  // `evaluator` must be prepared and outlive the service.
  Service(ServiceOptions options, eval::Evaluator& evaluator);
  ~Service() override;

  // Loads the task catalog, opens the store, starts the queue and the local workers.
  // In-process mode re-enqueues jobs an earlier process left unfinished.
  Status start();
  void stop();

  // Stores the jobs as queued, then enqueues them; returns their ids in order.
  Result<std::vector<std::string>> submit(const std::vector<JobRequest>& jobs);
  // The job's record once it is done or cancelled, waiting until `deadline` at most;
  // a record still queued/running when the deadline passes is returned as it is.
  Result<std::optional<JobRecord>> wait(const std::string& job_id,
                                        std::chrono::steady_clock::time_point deadline);
  Result<std::optional<JobRecord>> job(const std::string& job_id, bool with_verdict = true);
  Result<std::vector<LogEntry>> log(const std::string& job_id);
  Result<CancelOutcome> cancel(const std::string& job_id);

  bool has_task(const std::string& id) const { return catalog_.count(id) > 0; }
  const TaskCatalog& catalog() const { return catalog_; }
  const ServiceOptions& options() const { return options_; }
  ServiceMetrics& metrics() { return metrics_; }
  // Prometheus text of all metrics, gauges read now.
  std::string metrics_text();
  // {"status": "ok"|"degraded", "queue", "workers", "tasks", "jobs": {...}}; `healthy`
  // is false when the store or the queue cannot be reached.
  nlohmann::json health(bool& healthy);

  // ResultSink (worker threads, the Redis collector).
  Result<CommitOutcome> commit(const ResultMessage& result) override;
  void started(const std::string& job_id, const std::string& worker, int attempt) override;
  bool cancelled(const std::string& job_id) override;

 private:
  void notify_waiters();

  ServiceOptions options_;
  eval::Evaluator& evaluator_;
  TaskCatalog catalog_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobQueue> queue_;
  MemoryQueue* memory_queue_ = nullptr;  // queue_ when in-process
  std::unique_ptr<WorkerPool> workers_;
  ServiceMetrics metrics_;
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  std::atomic<bool> stopped_{false};
};

// JSON of a job record for the API: ids, state, timestamps and, when done, the verdict.
nlohmann::json job_json(const JobRecord& r);

}  // namespace musacoder::service
