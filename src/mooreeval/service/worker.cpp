#include "mooreeval/service/worker.h"

#include <unistd.h>

#include <iostream>

namespace musacoder::service {

namespace {

std::string default_worker_name() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "host");
  return std::string(host) + ":" + std::to_string(getpid());
}

ResultMessage to_message(const std::string& job_id, const std::string& worker, const eval::Verdict& v) {
  ResultMessage m;
  m.job_id = job_id;
  m.worker = worker;
  m.verdict = eval::verdict_name(v.verdict);
  if (v.scored()) m.reward = v.reward.total;
  m.verdict_json = eval::to_json(v).dump();
  return m;
}

}  // namespace

Result<TaskCatalog> load_catalog(const std::filesystem::path& tasks_dir) {
  auto suite = task::load_suite(tasks_dir);
  if (!suite.ok()) return suite.status();
  TaskCatalog c;
  for (auto& t : *suite) c.emplace(t.id, std::move(t));
  return c;
}

eval::Verdict poison_verdict(const eval::Evaluator& evaluator, const TaskCatalog& catalog, const Delivery& d,
                             int max_deliveries) {
  task::TaskSpec spec;
  spec.id = d.job.task_id;
  if (auto it = catalog.find(d.job.task_id); it != catalog.end()) spec = it->second;
  // reject_submission fills task, backend and settings; the class is then infra: the
  // candidate is not scored (the job may kill workers for reasons of ours).
  eval::Verdict v = evaluator.reject_submission(
      spec, "job killed " + std::to_string(d.deliveries - 1) + " workers (delivered " +
                std::to_string(d.deliveries) + " times, limit " + std::to_string(max_deliveries) +
                "); not evaluated again");
  v.verdict = eval::VerdictClass::kInfraError;
  v.stage = eval::Stage::kQueue;
  v.attempts = d.deliveries - 1;
  return v;
}

WorkerPool::WorkerPool(WorkerOptions options, eval::Evaluator& evaluator, const TaskCatalog& catalog,
                       SourceFactory open_source)
    : options_(std::move(options)),
      evaluator_(evaluator),
      catalog_(catalog),
      open_source_(std::move(open_source)) {
  if (options_.name.empty()) options_.name = default_worker_name();
}

WorkerPool::~WorkerPool() {
  stop();
}

Status WorkerPool::start() {
  for (int i = 0; i <= options_.threads; ++i) {  // the last one is the keeper's
    auto src = open_source_(options_.name + ":" + (i < options_.threads ? std::to_string(i) : "keeper"));
    if (!src.ok()) return src.status();
    sources_.push_back(std::move(*src));
  }
  for (int i = 0; i < options_.threads; ++i)
    threads_.emplace_back([this, i] { work(*sources_[i], options_.name + ":" + std::to_string(i)); });
  threads_.emplace_back([this] { keep(*sources_.back()); });
  return {};
}

void WorkerPool::stop() {
  stop_ = true;
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

bool WorkerPool::until_ok(const std::function<Status()>& op, const char* what) {
  auto backoff = std::chrono::milliseconds(100);
  while (true) {
    Status st = op();
    if (st.ok()) return true;
    std::cerr << "mooreeval worker " << options_.name << ": " << what << ": " << st.message()
              << " (retrying)\n";
    if (stop_) return false;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
}

void WorkerPool::work(WorkSource& source, const std::string& consumer) {
  auto backoff = std::chrono::milliseconds(100);
  while (!stop_) {
    auto d = source.next(options_.poll_wait);
    if (!d.ok()) {
      std::cerr << "mooreeval worker " << consumer << ": queue: " << d.status().message() << " (retrying)\n";
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
      continue;
    }
    backoff = std::chrono::milliseconds(100);
    if (!*d) continue;
    handle(source, consumer, **d);
  }
}

void WorkerPool::handle(WorkSource& source, const std::string& consumer, const Delivery& d) {
  if (!d.receipt.empty()) {
    std::lock_guard<std::mutex> lock(in_flight_mu_);
    in_flight_[d.receipt] = consumer;
  }
  auto done_with = [&] {
    std::lock_guard<std::mutex> lock(in_flight_mu_);
    in_flight_.erase(d.receipt);
  };
  if (d.deliveries > options_.max_deliveries) {
    eval::Verdict v = poison_verdict(evaluator_, catalog_, d, options_.max_deliveries);
    until_ok([&] { return source.complete(d, to_message(d.job.job_id, consumer, v)); },
             "store poison verdict");
    done_with();
    return;
  }
  auto cancelled = source.is_cancelled(d.job.job_id);
  if (cancelled.ok() && *cancelled) {
    until_ok([&] { return source.drop(d); }, "drop cancelled job");
    done_with();
    return;
  }
  until_ok([&] { return source.started(d, consumer); }, "report start");
  eval::Verdict v;
  if (auto it = catalog_.find(d.job.task_id); it != catalog_.end()) {
    v = evaluator_.evaluate(it->second, d.job.candidate);
  } else {
    task::TaskSpec spec;
    spec.id = d.job.task_id;
    v = evaluator_.reject_submission(spec, "");
    v.verdict = eval::VerdictClass::kInfraError;
    v.stage = eval::Stage::kQueue;
    v.message = "worker " + consumer + " has no task '" + d.job.task_id + "' in its suite (--tasks)";
  }
  evaluated_++;
  // If the pool is stopping and the verdict cannot be handed on, the job stays pending
  // and is re-run elsewhere after the visibility timeout: slower, never lost.
  until_ok([&] { return source.complete(d, to_message(d.job.job_id, consumer, v)); }, "hand on verdict");
  done_with();
}

void WorkerPool::keep(WorkSource& source) {
  auto next = std::chrono::steady_clock::now();
  while (!stop_) {
    if (std::chrono::steady_clock::now() >= next) {
      std::vector<std::pair<std::string, std::string>> in_flight;
      {
        std::lock_guard<std::mutex> lock(in_flight_mu_);
        in_flight.assign(in_flight_.begin(), in_flight_.end());
      }
      if (Status st = source.heartbeat(options_.name, options_.threads); !st.ok())
        std::cerr << "mooreeval worker " << options_.name << ": heartbeat: " << st.message() << "\n";
      if (Status st = source.keep_alive(in_flight); !st.ok())
        std::cerr << "mooreeval worker " << options_.name << ": keep-alive: " << st.message() << "\n";
      next = std::chrono::steady_clock::now() + options_.keep_alive_interval;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace musacoder::service
