// The job queue behind one interface, in two implementations: MemoryQueue (embedded
// default, one process) and RedisQueue (a fleet of `mooreeval worker` processes on any
// number of hosts, Redis Streams with consumer groups; redis_queue.h).
//
// Delivery contract, both implementations: a job handed out by WorkSource::next() stays
// owned by that consumer until complete() or drop(); it is acknowledged only after its
// result is committed to the server's SQLite store (ResultSink::commit), so a worker that
// dies before that loses nothing: the job is delivered again (Redis: after the visibility
// timeout; memory: on the next start of the server, from the store).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "mooreeval/service/job.h"
#include "mooreeval/service/store.h"

namespace musacoder::service {

// One evaluated job on its way to the store.
struct ResultMessage {
  std::string job_id;
  std::string worker;            // consumer that evaluated it
  std::string verdict;           // class name, e.g. "ok"
  std::optional<double> reward;  // null for infra_error
  std::string verdict_json;      // full verdict (schema mooreeval.verdict/1)
};

// Where results are committed: the server's store (implemented by Service).
// Thread-safety: implementations are called from worker and collector threads.
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual Result<CommitOutcome> commit(const ResultMessage& result) = 0;
  // Attempt `attempt` (= delivery count) of a job started on `worker`.
  virtual void started(const std::string& job_id, const std::string& worker, int attempt) = 0;
  virtual bool cancelled(const std::string& job_id) = 0;
};

// The consumer side of the queue, as one worker thread sees it.
// Thread-safety: one WorkSource per thread (a Redis source owns one connection).
class WorkSource {
 public:
  virtual ~WorkSource() = default;
  // The next job (new, or reclaimed from a dead consumer), waiting at most `wait`;
  // nullopt when there is none. A non-ok status is a queue failure (retry later).
  virtual Result<std::optional<Delivery>> next(std::chrono::milliseconds wait) = 0;
  virtual Result<bool> is_cancelled(const std::string& job_id) = 0;
  virtual Status started(const Delivery& d, const std::string& worker) = 0;
  // Hands the result on; the delivery is acknowledged once it is committed.
  virtual Status complete(const Delivery& d, const ResultMessage& result) = 0;
  // Acknowledges a cancelled job without a result.
  virtual Status drop(const Delivery& d) = 0;
  // Tells the queue that these deliveries are still being worked on (so a slow but
  // alive worker keeps them past the visibility timeout): (receipt, consumer) pairs.
  virtual Status keep_alive(const std::vector<std::pair<std::string, std::string>>& in_flight) = 0;
  // Announces a live worker process with `slots` evaluation threads.
  virtual Status heartbeat(const std::string& worker, int slots) = 0;
};

// The producer side, as the server sees it.
class JobQueue {
 public:
  virtual ~JobQueue() = default;
  virtual const char* kind() const = 0;  // "memory" | "redis"
  // Enqueues jobs already inserted in the store (so a result can never precede its job).
  virtual Status enqueue(const std::vector<JobMessage>& jobs) = 0;
  // Tells workers that a job was cancelled (the store already says so).
  virtual Status cancel(const std::string& job_id) = 0;
  // Evaluation threads of the fleet's worker processes with a fresh heartbeat; 0 for
  // the in-process queue (its threads are the server's own).
  virtual Result<int64_t> fleet_workers() = 0;
  // A consumer for an in-process worker thread.
  virtual Result<std::unique_ptr<WorkSource>> open_source(const std::string& consumer) = 0;
  // Starts whatever the queue needs to run server-side (Redis: the results collector).
  virtual Status start() = 0;
  // Wakes and stops waiting consumers and server-side threads; idempotent.
  virtual void shutdown() = 0;
};

}  // namespace musacoder::service
