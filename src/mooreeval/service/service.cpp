#include "mooreeval/service/service.h"

#include <iostream>

namespace musacoder::service {

using nlohmann::json;

Service::Service(ServiceOptions options, eval::Evaluator& evaluator)
    : options_(std::move(options)), evaluator_(evaluator) {}

Service::~Service() {
  stop();
}

Status Service::start() {
  auto catalog = load_catalog(options_.tasks_dir);
  if (!catalog.ok()) return catalog.status();
  catalog_ = std::move(*catalog);
  auto store = Store::open(options_.store);
  if (!store.ok()) return store.status();
  store_ = std::move(*store);

  if (options_.queue_url.empty()) {
    if (options_.workers.threads < 1)
      return invalid_argument("the in-process queue needs at least one worker thread (--workers)");
    auto q = std::make_unique<MemoryQueue>(*this);
    memory_queue_ = q.get();
    queue_ = std::move(q);
  } else {
    options_.redis.url = options_.queue_url;
    queue_ = std::make_unique<RedisQueue>(options_.redis, *this);
  }
  MC_RETURN_IF_ERROR(queue_->start());

  if (memory_queue_) {
    // Jobs of an earlier process that died: delivered again with their attempt count,
    // so a job that keeps killing the server ends as infra_error (see worker.h).
    auto unfinished = store_->unfinished_jobs();
    if (!unfinished.ok()) return unfinished.status();
    for (auto& u : *unfinished) memory_queue_->enqueue_recovered(std::move(u.job), u.attempts);
    if (!unfinished->empty())
      std::cerr << "mooreeval serve: re-enqueued " << unfinished->size()
                << " unfinished job(s) from the store\n";
  }
  if (auto used = store_->used_bytes(); used.ok()) used_bytes_ = *used;
  retention_ = std::thread([this] { retention_loop(); });
  if (options_.workers.threads > 0) {
    JobQueue* q = queue_.get();
    workers_ =
        std::make_unique<WorkerPool>(options_.workers, evaluator_, catalog_,
                                     [q](const std::string& consumer) { return q->open_source(consumer); });
    MC_RETURN_IF_ERROR(workers_->start());
  }
  return {};
}

void Service::stop() {
  if (stopped_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(retention_mu_);
    retention_cv_.notify_all();
  }
  if (retention_.joinable()) retention_.join();
  if (queue_) queue_->shutdown();
  if (workers_) workers_->stop();
  notify_waiters();
}

Result<SubmitOutcome> Service::submit(const std::vector<JobRequest>& jobs, const std::string& owner,
                                      const std::optional<IdempotencyKey>& key, bool owner_quota) {
  SubmitOutcome out;
  auto conflict = [&] {
    out.refused = ApiError{422, "idempotency_conflict",
                           "Idempotency-Key '" + key->key + "' was used before for a different request"};
    return out;
  };
  // A repeated key answers before any quota: it creates nothing.
  if (key) {
    auto earlier = store_->find_key(owner, *key);
    if (!earlier.ok()) return earlier.status();
    if (*earlier && (*earlier)->key_conflict) return conflict();
    if (*earlier) {
      out.job_ids = (*earlier)->job_ids;
      out.replayed = true;
      return out;
    }
  }
  const int64_t n = static_cast<int64_t>(jobs.size());
  auto mine = store_->unfinished_count(owner);
  if (!mine.ok()) return mine.status();
  auto all = store_->unfinished_total();
  if (!all.ok()) return all.status();
  if (owner_quota && *mine + n > options_.quotas.max_unfinished_per_owner) {
    out.refused = ApiError{429, "quota_exceeded",
                           "'" + owner + "' has " + std::to_string(*mine) + " unfinished job(s); " +
                               std::to_string(n) + " more would pass the limit of " +
                               std::to_string(options_.quotas.max_unfinished_per_owner)};
  } else if (*all + n > options_.quotas.max_unfinished) {
    out.refused = ApiError{429, "quota_exceeded",
                           "the service has " + std::to_string(*all) +
                               " unfinished jobs (limit " + std::to_string(options_.quotas.max_unfinished) + ")"};
  } else if (used_bytes_ >= options_.retention.max_store_bytes) {
    out.refused = ApiError{507, "store_full",
                           "the job store is at its size bound (" +
                               std::to_string(options_.retention.max_store_bytes >> 20) +
                               " MiB) with unfinished or recent jobs; retry later"};
  }
  if (out.refused) {
    out.retry_after_seconds = 5;
    return out;
  }
  std::vector<JobMessage> messages;
  for (const auto& j : jobs) messages.push_back({new_job_id(), j.task_id, j.candidate, j.label});
  auto inserted = store_->insert_jobs(messages, owner, key);
  if (!inserted.ok()) return inserted.status();
  out.job_ids = inserted->job_ids;
  out.replayed = inserted->replayed;
  if (inserted->key_conflict) return conflict();  // a concurrent request took the key
  if (out.replayed) return out;
  if (Status st = queue_->enqueue(messages); !st.ok()) {
    // Stored but not queued: cancel them so they do not look pending forever, and forget
    // the key so that the client's retry submits afresh.
    for (const auto& id : out.job_ids) (void)store_->cancel(id);
    if (key) (void)store_->forget_key(owner, key->key);
    return unavailable("queue: " + st.message());
  }
  metrics_.record_submitted(out.job_ids.size());
  if (auto used = store_->used_bytes(); used.ok()) used_bytes_ = *used;
  return out;
}

void Service::finished(const std::string& job_id) {
  notify_waiters();
  if (finish_listener_) finish_listener_(job_id);
}

Result<PurgeOutcome> Service::enforce_retention() {
  const double now = unix_now();
  const auto& r = options_.retention;
  const double keys_before = now - static_cast<double>(r.key_age.count());
  PurgeOutcome total;
  // Purges finished jobs that ended before `before`, 2000 per transaction, while `more()`.
  auto purge_while = [&](double before, const std::function<bool()>& more) -> Status {
    while (more()) {
      auto p = store_->purge(before, 2000, keys_before);
      if (!p.ok()) return p.status();
      total.jobs += p->jobs;
      total.keys += p->keys;
      auto used = store_->used_bytes();
      if (!used.ok()) return used.status();
      used_bytes_ = *used;
      if (p->jobs < 2000) break;
    }
    return {};
  };
  // Age, then size: the oldest finished jobs go until the store is under 90% of its bound
  // (only unfinished jobs left: submissions are refused until they finish).
  MC_RETURN_IF_ERROR(purge_while(now - static_cast<double>(r.max_age.count()), [] { return true; }));
  const int64_t target = r.max_store_bytes / 10 * 9;
  MC_RETURN_IF_ERROR(purge_while(now + 1, [&] { return used_bytes_ >= target; }));
  if (total.jobs > 0)
    std::cerr << "mooreeval serve: retention removed " << total.jobs << " finished job(s); store "
              << (used_bytes_ >> 20) << " MiB in use" << std::endl;
  return total;
}

void Service::retention_loop() {
  std::unique_lock<std::mutex> lock(retention_mu_);
  while (!stopped_) {
    retention_cv_.wait_for(lock, options_.retention.interval, [this] { return stopped_.load(); });
    if (stopped_) break;
    lock.unlock();
    if (auto p = enforce_retention(); !p.ok())
      std::cerr << "mooreeval serve: retention: " << p.status().message() << std::endl;
    lock.lock();
  }
}

Result<std::optional<JobRecord>> Service::wait(const std::string& job_id,
                                               std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(wait_mu_);
  while (true) {
    auto r = store_->get(job_id, true);
    if (!r.ok() || !*r) return r;
    const JobState s = (*r)->state;
    if (s == JobState::kDone || s == JobState::kCancelled || stopped_) return r;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return r;
    // Woken by every commit; the periodic re-read covers results committed elsewhere.
    wait_cv_.wait_until(lock, std::min(deadline, now + std::chrono::seconds(1)));
  }
}

Result<std::optional<JobRecord>> Service::job(const std::string& job_id, bool with_verdict) {
  return store_->get(job_id, with_verdict);
}

Result<std::vector<LogEntry>> Service::log(const std::string& job_id) {
  return store_->log(job_id);
}

Result<CancelOutcome> Service::cancel(const std::string& job_id) {
  auto outcome = store_->cancel(job_id);
  if (!outcome.ok()) return outcome;
  if (*outcome == CancelOutcome::kCancelled) {
    if (Status st = queue_->cancel(job_id); !st.ok())
      // The store already says cancelled, and a late result is dropped there; workers
      // that do not hear of it only waste an evaluation.
      std::cerr << "mooreeval serve: cancel " << job_id << ": queue: " << st.message() << "\n";
    finished(job_id);
  }
  return outcome;
}

void Service::notify_waiters() {
  std::lock_guard<std::mutex> lock(wait_mu_);
  wait_cv_.notify_all();
}

Result<CommitOutcome> Service::commit(const ResultMessage& m) {
  auto outcome = store_->commit_result(m.job_id, m.verdict, m.reward, m.verdict_json, m.worker);
  if (!outcome.ok()) return outcome;
  if (*outcome == CommitOutcome::kStored) {
    json v = json::parse(m.verdict_json, nullptr, false);
    if (!v.is_discarded()) metrics_.record_verdict(v);
    finished(m.job_id);
  } else if (*outcome == CommitOutcome::kDuplicate) {
    metrics_.record_duplicate_result();
  }
  return outcome;
}

void Service::started(const std::string& job_id, const std::string& worker, int attempt) {
  if (attempt > 1) metrics_.record_reclaim();
  if (Status st = store_->mark_running(job_id, worker, attempt); !st.ok())
    std::cerr << "mooreeval serve: mark running " << job_id << ": " << st.message() << "\n";
}

bool Service::cancelled(const std::string& job_id) {
  auto r = store_->get(job_id, false);
  return r.ok() && *r && (*r)->state == JobState::kCancelled;
}

std::string Service::metrics_text() {
  Gauges g;
  if (auto c = store_->counts(); c.ok()) {
    g.queue_depth = c->queued;
    g.running = c->running;
    g.done = c->done;
    g.cancelled = c->cancelled;
  }
  g.workers = workers_ ? workers_->threads() : 0;
  if (auto f = queue_->fleet_workers(); f.ok()) g.workers += *f;
  return metrics_.render(g);
}

json Service::health(bool& healthy) {
  healthy = true;
  json h = {{"queue", queue_->kind()}, {"tasks", catalog_.size()}};
  auto c = store_->counts();
  if (c.ok()) {
    h["jobs"] = {
        {"queued", c->queued}, {"running", c->running}, {"done", c->done}, {"cancelled", c->cancelled}};
  } else {
    healthy = false;
    h["store_error"] = c.status().message();
  }
  int64_t workers = workers_ ? workers_->threads() : 0;
  auto f = queue_->fleet_workers();
  if (f.ok()) {
    workers += *f;
  } else {
    healthy = false;
    h["queue_error"] = f.status().message();
  }
  h["workers"] = workers;
  h["status"] = healthy ? "ok" : "degraded";
  return h;
}

json job_json(const JobRecord& r) {
  auto ts = [](double t) { return t > 0 ? json(t) : json(nullptr); };
  json j = {{"job_id", r.job_id},
            {"task", r.task_id},
            {"label", r.label},
            {"state", job_state_name(r.state)},
            {"attempts", r.attempts},
            {"worker", r.worker},
            {"candidate_sha256", r.candidate_sha256},
            {"candidate_bytes", r.candidate_bytes},
            {"created_at", ts(r.created_at)},
            {"started_at", ts(r.started_at)},
            {"finished_at", ts(r.finished_at)},
            {"verdict", nullptr}};
  if (r.state == JobState::kDone && !r.verdict_json.empty()) {
    json v = json::parse(r.verdict_json, nullptr, false);
    j["verdict"] = v.is_discarded() ? json(nullptr) : v;
  }
  return j;
}

}  // namespace musacoder::service
