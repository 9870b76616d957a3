#include "mooreeval/service/evaluate_waiters.h"

#include <algorithm>

namespace musacoder::service {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

EvaluateWaiters::EvaluateWaiters(Service& service, HttpServer& http)
    : service_(service), http_(http), thread_([this] { loop(); }) {}

EvaluateWaiters::~EvaluateWaiters() {
  stop();
}

void EvaluateWaiters::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EvaluateWaiters::add(EvaluateWaiter w) {
  std::lock_guard<std::mutex> lock(mu_);
  fresh_.push_back(std::move(w));
  cv_.notify_all();
}

void EvaluateWaiters::finished(const std::string& job_id) {
  // Recorded even when nobody waits yet: the loop may be checking that waiter right now.
  std::lock_guard<std::mutex> lock(mu_);
  finished_.insert(job_id);
  cv_.notify_all();
}

bool EvaluateWaiters::answer(const EvaluateWaiter& w, bool deadline_passed) {
  HttpReply reply;
  auto rec = service_.job(w.job_id);
  if (!rec.ok() || !*rec) {
    reply = {500, ApiError{500, "internal", rec.ok() ? "job " + w.job_id + " vanished" : rec.status().message()}
                      .to_json()
                      .dump()};
  } else if ((*rec)->state == JobState::kDone || (*rec)->state == JobState::kCancelled) {
    reply = {200, job_json(**rec).dump(-1, ' ', false, json::error_handler_t::replace)};
  } else if (!deadline_passed) {
    return false;
  } else {
    std::string state = job_state_name((*rec)->state);
    if (w.cancel_on_deadline) {
      auto c = service_.cancel(w.job_id);
      if (c.ok() && *c == CancelOutcome::kCancelled) state = "cancelled";
    }
    json err = ApiError{504, "deadline_exceeded",
                        "job " + w.job_id + " not finished within " + std::to_string(w.deadline_seconds) + " s" +
                            (state == "cancelled" ? "; cancelled" : "; poll GET /v1/jobs/" + w.job_id)}
                   .to_json();
    err["job_id"] = w.job_id;
    err["state"] = state;
    reply = {504, err.dump()};
  }
  reply.body += "\n";
  service_.metrics().record_request("/v1/evaluate", reply.status,
                                    std::chrono::duration<double>(Clock::now() - w.received).count());
  http_.reply(w.conn, serialize_reply(reply, w.close));
  return true;
}

void EvaluateWaiters::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  auto next_recheck = Clock::now() + std::chrono::seconds(5);
  while (!stop_) {
    // To check now: new waiters (their job may have finished before they were added),
    // those whose job finished, those past their deadline; all of them every 5 s as a
    // safety net (notifications do the work).
    const auto now = Clock::now();
    const bool recheck = now >= next_recheck;
    if (recheck) next_recheck = now + std::chrono::seconds(5);
    std::vector<EvaluateWaiter> check = std::move(fresh_);
    fresh_.clear();
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (recheck || it->second.deadline <= now || finished_.count(it->first)) {
        check.push_back(std::move(it->second));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    finished_.clear();
    lock.unlock();
    std::vector<EvaluateWaiter> back;
    for (auto& w : check)
      if (!answer(w, Clock::now() >= w.deadline)) back.push_back(std::move(w));
    lock.lock();
    for (auto& w : back) waiting_.emplace(w.job_id, std::move(w));
    auto wake = next_recheck;
    for (const auto& [id, w] : waiting_) wake = std::min(wake, w.deadline);
    cv_.wait_until(lock, wake, [this] { return stop_ || !finished_.empty() || !fresh_.empty(); });
  }
}

}  // namespace musacoder::service
