// Worker threads: pull a job, evaluate it, hand the verdict back, repeat. Used in-process
// by the embedded server and by `mooreeval worker` against Redis.
//
// Per delivery, in order: a job delivered more than `max_deliveries` times (it killed
// every worker that ran it) becomes an infra_error verdict without running; a cancelled
// job is dropped; otherwise `started` is reported, the evaluator runs, and the verdict is
// completed (retried until it is handed on: a verdict is never thrown away). A keeper
// thread sends heartbeats and keeps in-flight jobs alive past the visibility timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mooreeval/pipeline/evaluator.h"
#include "mooreeval/service/queue.h"
#include "mooreeval/task/task.h"

namespace musacoder::service {

using TaskCatalog = std::map<std::string, task::TaskSpec>;  // task id -> spec

// Every task of a suite directory, by id.
Result<TaskCatalog> load_catalog(const std::filesystem::path& tasks_dir);

struct WorkerOptions {
  int threads = 1;         // concurrent evaluations (consumers)
  std::string name;        // worker name; consumers are "<name>:<i>" (default host:pid)
  int max_deliveries = 3;  // a job delivered more often is infra_error ("killed N workers")
  std::chrono::milliseconds poll_wait{1000};            // longest block in one pull (also the stop latency)
  std::chrono::milliseconds keep_alive_interval{2000};  // heartbeat and in-flight refresh period
};

// The verdict stored for a job that exhausted its deliveries.
eval::Verdict poison_verdict(const eval::Evaluator& evaluator, const TaskCatalog& catalog, const Delivery& d,
                             int max_deliveries);

class WorkerPool {
 public:
  using SourceFactory = std::function<Result<std::unique_ptr<WorkSource>>(const std::string& consumer)>;

  // `evaluator` and `catalog` must outlive the pool; `open_source` is called once per
  // thread (and once for the keeper) from start().
  WorkerPool(WorkerOptions options, eval::Evaluator& evaluator, const TaskCatalog& catalog,
             SourceFactory open_source);
  ~WorkerPool();

  // Opens the sources and starts the threads. A source that cannot be opened fails here.
  Status start();
  // Finishes the evaluations in progress, then joins. Idempotent.
  void stop();

  int threads() const { return options_.threads; }
  int64_t evaluated() const { return evaluated_; }
  const std::string& name() const { return options_.name; }

 private:
  void work(WorkSource& source, const std::string& consumer);
  void keep(WorkSource& source);
  void handle(WorkSource& source, const std::string& consumer, const Delivery& d);
  // Retries `op` with backoff until it succeeds or the pool stops.
  bool until_ok(const std::function<Status()>& op, const char* what);

  WorkerOptions options_;
  eval::Evaluator& evaluator_;
  const TaskCatalog& catalog_;
  SourceFactory open_source_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> evaluated_{0};
  std::vector<std::unique_ptr<WorkSource>> sources_;
  std::vector<std::thread> threads_;
  std::mutex in_flight_mu_;
  std::map<std::string, std::string> in_flight_;  // receipt -> consumer
};

}  // namespace musacoder::service
