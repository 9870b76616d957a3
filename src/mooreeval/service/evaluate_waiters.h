// Synchronous evaluations (POST /v1/evaluate) without a thread each: the request's job is
// submitted by a handler thread, which then returns; the connection waits here until the
// job is done or cancelled (Service's finish listener) or its deadline passes (504, the
// job cancelled when asked), and one thread writes every answer through HttpServer::reply.
//
// Thread-safety: add() and finished() from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mooreeval/service/http_server.h"
#include "mooreeval/service/service.h"

namespace musacoder::service {

struct EvaluateWaiter {
  ConnId conn = 0;
  std::string job_id;
  std::chrono::steady_clock::time_point deadline;
  double deadline_seconds = 0;      // as asked, for the 504 message
  bool cancel_on_deadline = false;  // cancel the job when the deadline passes
  bool close = false;               // close the connection after the answer
  std::chrono::steady_clock::time_point received;  // for the request latency metric
};

class EvaluateWaiters {
 public:
  // `service` and `http` must outlive this object.
  EvaluateWaiters(Service& service, HttpServer& http);
  ~EvaluateWaiters();
  EvaluateWaiters(const EvaluateWaiters&) = delete;
  EvaluateWaiters& operator=(const EvaluateWaiters&) = delete;

  void add(EvaluateWaiter w);
  // The job is done or cancelled.
  void finished(const std::string& job_id);
  void stop();

 private:
  void loop();
  // Answers `w` from the job's current record; false when it is still unfinished and the
  // deadline has not passed.
  bool answer(const EvaluateWaiter& w, bool deadline_passed);

  Service& service_;
  HttpServer& http_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<EvaluateWaiter> fresh_;                   // GUARDED_BY(mu_): not checked yet
  std::multimap<std::string, EvaluateWaiter> waiting_;  // GUARDED_BY(mu_): job id -> waiter
  std::set<std::string> finished_;                      // GUARDED_BY(mu_)
  bool stop_ = false;                                   // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace musacoder::service
