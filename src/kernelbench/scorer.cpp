#include "kernelbench/scorer.h"

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "core/files.h"
#include "core/text.h"

namespace musacoder::kernelbench {
namespace fs = std::filesystem;
using nlohmann::json;

json local_verdict(const std::string& task_id, const std::string& verdict_class, const std::string& message) {
  return {{"schema", "mooreeval.verdict/1"}, {"task", task_id}, {"verdict", verdict_class},
          {"message", message}, {"stage", "harness"}, {"compiled", false}};
}

VerdictFacts read_verdict(const json& v) {
  VerdictFacts f;
  if (!v.is_object() || !v.contains("verdict") || !v["verdict"].is_string()) {
    f.verdict_class = "infra_error";
    f.infra = true;
    return f;
  }
  f.verdict_class = v["verdict"].get<std::string>();
  f.infra = f.verdict_class == "infra_error";
  f.correct = f.verdict_class == "ok";
  if (v.contains("speedup") && v["speedup"].is_number()) f.speedup = v["speedup"].get<double>();
  return f;
}

namespace {

// Collects concurrent score() calls into batches for data::Verifier::verify.
class InProcessScorer : public Scorer {
 public:
  InProcessScorer(std::unique_ptr<data::Verifier> v, ScorerSettings s)
      : verifier_(std::move(v)), settings_(std::move(s)), thread_([this] { loop(); }) {}
  ~InProcessScorer() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  json score(const SuiteTask& task, const std::string& code) override {
    const fs::path file = settings_.scratch_dir / ("submission_" + std::to_string(counter_++) + ".py");
    if (Status st = write_file_atomic(file, code); !st.ok())
      return local_verdict(task.id, "infra_error", "cannot write the submission: " + st.message());
    Pending p{{task.id, task.path, file}, {}};
    auto verdict = p.done.get_future();
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(p));
    }
    cv_.notify_all();
    json v = verdict.get();
    std::error_code ec;
    fs::remove(file, ec);
    return v;
  }
  std::string describe() const override { return "in-process " + settings_.verifier.backend; }

 private:
  struct Pending {
    data::VerifyJob job;
    std::promise<json> done;
  };

  void loop() {
    for (;;) {
      std::vector<Pending> batch;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        while (!queue_.empty()) {
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
      std::vector<data::VerifyJob> jobs;
      for (auto& p : batch) jobs.push_back(p.job);
      std::vector<bool> answered(batch.size(), false);
      auto out = verifier_->verify(jobs, [&](std::size_t i, const json& v) {
        batch[i].done.set_value(v);
        answered[i] = true;
      });
      for (std::size_t i = 0; i < batch.size(); ++i)
        if (!answered[i]) batch[i].done.set_value(i < out.size() && !out[i].is_null() ? out[i]
                                                  : local_verdict(jobs[i].task_id, "infra_error", "no verdict"));
    }
  }

  std::unique_ptr<data::Verifier> verifier_;
  ScorerSettings settings_;
  std::atomic<uint64_t> counter_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;  // GUARDED_BY(mu_)
  bool stop_ = false;          // GUARDED_BY(mu_)
  std::thread thread_;         // last: starts after the members it uses
};

class ServiceScorer : public Scorer {
 public:
  explicit ServiceScorer(ScorerSettings s) : settings_(std::move(s)) {}

  json score(const SuiteTask& task, const std::string& code) override {
    httplib::Client cli(settings_.service_url);
    const auto timeout = std::chrono::seconds(static_cast<int64_t>(settings_.service_deadline_seconds) + 30);
    cli.set_read_timeout(timeout);
    cli.set_write_timeout(std::chrono::seconds(60));
    httplib::Headers headers;
    if (!settings_.service_token.empty()) headers.emplace("Authorization", "Bearer " + settings_.service_token);
    json body = {{"task", task.id}, {"candidate", sanitize_utf8(code)}, {"label", task.id},
                 {"deadline_seconds", settings_.service_deadline_seconds}};
    auto r = cli.Post("/v1/evaluate", headers, body.dump(), "application/json");
    if (!r) return local_verdict(task.id, "infra_error", "service: " + httplib::to_string(r.error()));
    if (r->status != 200)
      return local_verdict(task.id, "infra_error",
                           "service: HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 300));
    json j = json::parse(r->body, nullptr, false);
    if (j.is_discarded() || !j.contains("verdict") || !j["verdict"].is_object())
      return local_verdict(task.id, "infra_error", "service: the reply holds no verdict");
    return j["verdict"];
  }
  std::string describe() const override { return "service " + settings_.service_url; }

 private:
  ScorerSettings settings_;
};

}  // namespace

Result<std::unique_ptr<Scorer>> Scorer::create(const ScorerSettings& settings) {
  if (!settings.service_url.empty()) {
    httplib::Client cli(settings.service_url);
    cli.set_connection_timeout(std::chrono::seconds(10));
    auto r = cli.Get("/healthz");
    if (!r || r->status != 200)
      return unavailable("the MooreEval service at " + settings.service_url + " does not answer /healthz");
    return std::unique_ptr<Scorer>(std::make_unique<ServiceScorer>(settings));
  }
  if (settings.scratch_dir.empty()) return invalid_argument("the in-process scorer needs a scratch dir");
  std::error_code ec;
  fs::create_directories(settings.scratch_dir, ec);
  auto v = data::Verifier::create(settings.verifier);
  if (!v.ok()) return v.status();
  return std::unique_ptr<Scorer>(std::make_unique<InProcessScorer>(std::move(*v), settings));
}

}  // namespace musacoder::kernelbench
