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
#include <functional>
#include <thread>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mooreeval/pipeline/evaluator.h"
#include "mooreeval/service/memory_queue.h"
#include "mooreeval/service/metrics.h"
#include "mooreeval/service/redis_queue.h"
#include "mooreeval/service/request.h"
#include "mooreeval/service/store.h"
#include "mooreeval/service/worker.h"

namespace musacoder::service {

// What one caller may keep in the service, and how long finished work is kept.
struct QuotaOptions {
  int64_t max_unfinished_per_owner = 10000;  // queued + running jobs of one token name (429 above)
  int64_t max_unfinished = 200000;           // queued + running jobs of everyone (429 above)
};

struct RetentionOptions {
  std::chrono::seconds max_age{std::chrono::hours(24 * 7)};  // finished jobs (verdicts, logs) older go
  int64_t max_store_bytes = int64_t{4} << 30;  // store size bound: oldest finished jobs go first;
                                               // submissions are refused (507) while still above
  std::chrono::seconds key_age{std::chrono::hours(24)};       // idempotency keys are honoured this long
  std::chrono::milliseconds interval{std::chrono::seconds(60)};  // how often the policy runs
};

struct ServiceOptions {
  std::filesystem::path tasks_dir;  // the suite jobs may name (ids only; no paths from clients)
  StoreOptions store;               // --db
  ServiceLimits limits;             // request limits
  QuotaOptions quotas;              // per-token and global queue quotas
  RetentionOptions retention;       // age and size of what the store keeps
  std::string queue_url;            // --queue redis://HOST:PORT; empty: in-process queue
  RedisQueueOptions redis;          // Redis keys and timeouts (url is taken from queue_url)
  WorkerOptions workers;            // local evaluation threads (--workers; 0 only with a Redis queue)
};

// The answer to a submission.
struct SubmitOutcome {
  std::vector<std::string> job_ids;  // in request order (the original ids when replayed)
  bool replayed = false;             // same idempotency key and request as before: nothing new
  std::optional<ApiError> refused;   // 429 quota, 507 store full, 422 key reused for another request
  int retry_after_seconds = 0;       // with 429/507
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

  // Stores the jobs as queued for `owner`, then enqueues them; the ids in order. Refuses
  // (outcome.refused) above the owner's or the global quota or the store size bound. With
  // an idempotency key, a repeated request returns the first one's ids and queues nothing.
  // `owner_quota` false: the owner's quota does not apply (admin tokens); the global does.
  Result<SubmitOutcome> submit(const std::vector<JobRequest>& jobs, const std::string& owner = "",
                               const std::optional<IdempotencyKey>& key = std::nullopt, bool owner_quota = true);
  // Called (from committing or cancelling threads) with the id of every job that became
  // done or cancelled; set once, before start().
  void set_finish_listener(std::function<void(const std::string& job_id)> listener) {
    finish_listener_ = std::move(listener);
  }
  // Applies the retention policy now (also done every retention.interval by a thread).
  Result<PurgeOutcome> enforce_retention();
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
  void finished(const std::string& job_id);
  void retention_loop();

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
  std::function<void(const std::string&)> finish_listener_;
  std::atomic<int64_t> used_bytes_{0};  // store size at the last check
  std::mutex retention_mu_;
  std::condition_variable retention_cv_;
  std::thread retention_;
};

// JSON of a job record for the API: ids, state, timestamps and, when done, the verdict.
nlohmann::json job_json(const JobRecord& r);

}  // namespace musacoder::service
