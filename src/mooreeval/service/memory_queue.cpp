#include "mooreeval/service/memory_queue.h"

namespace musacoder::service {

namespace {

class MemorySource final : public WorkSource {
 public:
  explicit MemorySource(MemoryQueue& q) : q_(q) {}
  Result<std::optional<Delivery>> next(std::chrono::milliseconds wait) override { return q_.pop(wait); }
  Result<bool> is_cancelled(const std::string& job_id) override { return q_.sink().cancelled(job_id); }
  Status started(const Delivery& d, const std::string& worker) override {
    q_.sink().started(d.job.job_id, worker, d.deliveries);
    return {};
  }
  Status complete(const Delivery&, const ResultMessage& result) override {
    auto outcome = q_.sink().commit(result);
    return outcome.ok() ? Status() : outcome.status();
  }
  Status drop(const Delivery&) override { return {}; }
  Status keep_alive(const std::vector<std::pair<std::string, std::string>>&) override { return {}; }
  Status heartbeat(const std::string&, int) override { return {}; }

 private:
  MemoryQueue& q_;
};

}  // namespace

Status MemoryQueue::enqueue(const std::vector<JobMessage>& jobs) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return unavailable("the service is shutting down");
    for (const auto& j : jobs) jobs_.push_back({j, 1, ""});
  }
  cv_.notify_all();
  return {};
}

void MemoryQueue::enqueue_recovered(JobMessage job, int attempts) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back({std::move(job), attempts + 1, ""});
  }
  cv_.notify_one();
}

Result<std::unique_ptr<WorkSource>> MemoryQueue::open_source(const std::string&) {
  return std::unique_ptr<WorkSource>(std::make_unique<MemorySource>(*this));
}

void MemoryQueue::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

std::optional<Delivery> MemoryQueue::pop(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, wait, [&] { return stopped_ || !jobs_.empty(); });
  if (stopped_ || jobs_.empty()) return std::nullopt;
  Delivery d = std::move(jobs_.front());
  jobs_.pop_front();
  return d;
}

std::size_t MemoryQueue::depth() {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.size();
}

}  // namespace musacoder::service
