// The fleet queue on Redis Streams (Redis ≥ 7.0: XAUTOCLAIM).
//
// Keys (prefix "mooreeval" by default):
//   <prefix>:jobs      stream of jobs {job_id, task, label, candidate}; consumer group
//                      <prefix>-workers, one consumer per worker thread ("host:pid:i")
//   <prefix>:results   stream of worker reports {type=started|result, job_id, entry, ...};
//                      consumer group <prefix>-server, read by the server's collector
//   <prefix>:cancelled:<job_id>   set (with a TTL) when a job is cancelled
//   <prefix>:worker:<name>        heartbeat of a worker process (TTL heartbeat_ttl)
//
// Life of a job: the server inserts it in SQLite, XADDs it to :jobs; a worker XREADGROUPs
// it (or XAUTOCLAIMs it from a consumer idle longer than the visibility timeout), reports
// `started`, evaluates, XADDs the verdict to :results. The collector commits the verdict
// to SQLite (idempotent per job id) and only then XACKs (and XDELs) the job entry and the
// result entry. A worker alive but busy past the visibility timeout keeps its job by
// re-claiming it for itself (keep_alive, XCLAIM JUSTID: no delivery count increase).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "mooreeval/service/queue.h"
#include "mooreeval/service/redis_client.h"

namespace musacoder::service {

struct RedisQueueOptions {
  std::string url = "redis://127.0.0.1:6379";           // --queue
  std::string prefix = "mooreeval";                     // --queue-prefix: key and group names
  std::string user;                                     // --redis-user (Redis 6 ACL user; empty: default)
  std::string password;  // --redis-password-file / MOOREEVAL_REDIS_PASSWORD (empty: no AUTH)
  std::chrono::milliseconds visibility_timeout{60000};  // idle pending jobs older than this are reclaimed
  std::chrono::milliseconds connect_timeout{2000};      // TCP connect to Redis
  std::chrono::milliseconds heartbeat_ttl{10000};       // a worker without a heartbeat this long is gone
  std::chrono::milliseconds cancel_ttl{std::chrono::hours(24)};  // how long cancel marks are kept
};

// The consumer side for one worker thread (own connection). Creates the streams and
// groups if they do not exist yet.
Result<std::unique_ptr<WorkSource>> open_redis_source(const RedisQueueOptions& options,
                                                      const std::string& consumer);

class RedisQueue final : public JobQueue {
 public:
  // `sink` (the server's store) must outlive the queue. Connects lazily.
  RedisQueue(RedisQueueOptions options, ResultSink& sink);
  ~RedisQueue() override;

  const char* kind() const override { return "redis"; }
  Status enqueue(const std::vector<JobMessage>& jobs) override;
  Status cancel(const std::string& job_id) override;
  Result<int64_t> fleet_workers() override;
  Result<std::unique_ptr<WorkSource>> open_source(const std::string& consumer) override {
    return open_redis_source(options_, consumer);
  }
  // Creates the streams/groups and starts the results collector thread.
  Status start() override;
  void shutdown() override;

 private:
  void collect_loop();

  RedisQueueOptions options_;
  RedisEndpoint endpoint_;
  ResultSink& sink_;
  std::mutex producer_mu_;  // guards producer_
  std::unique_ptr<RedisClient> producer_;
  std::atomic<bool> stop_{false};
  std::thread collector_;
};

}  // namespace musacoder::service
