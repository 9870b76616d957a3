// The embedded default: an in-process FIFO of jobs. Results are committed straight into
// the store by the worker thread (ResultSink), then the delivery is done. Reclaim across
// a crash of the whole process comes from the store: Service re-enqueues unfinished jobs
// at start (enqueue_recovered) with their delivery count.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>

#include "mooreeval/service/queue.h"

namespace musacoder::service {

class MemoryQueue final : public JobQueue {
 public:
  // `sink` must outlive the queue.
  explicit MemoryQueue(ResultSink& sink) : sink_(sink) {}

  const char* kind() const override { return "memory"; }
  Status enqueue(const std::vector<JobMessage>& jobs) override;
  // A job found unfinished in the store after `attempts` earlier starts.
  void enqueue_recovered(JobMessage job, int attempts);
  Status cancel(const std::string&) override { return {}; }  // workers read the store
  Result<int64_t> fleet_workers() override { return int64_t{0}; }
  Result<std::unique_ptr<WorkSource>> open_source(const std::string& consumer) override;
  Status start() override { return {}; }
  void shutdown() override;

  // Blocks up to `wait`; nullopt on timeout or after shutdown().
  std::optional<Delivery> pop(std::chrono::milliseconds wait);
  std::size_t depth();
  ResultSink& sink() { return sink_; }

 private:
  ResultSink& sink_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Delivery> jobs_;
  bool stopped_ = false;
};

}  // namespace musacoder::service
