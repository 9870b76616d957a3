#include "train/rl/reward_env.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "core/files.h"
#include "data/verifier.h"

namespace musacoder::train::rl {
namespace {

nlohmann::json infra_verdict(const std::string& task, const std::string& message) {
  return {{"schema", "mooreeval.verdict/1"}, {"task", task}, {"verdict", "infra_error"},
          {"stage", "reward_env"}, {"message", message}};
}

// A queue drained by `n` threads running `work(job)`; the destructor finishes what is queued.
class WorkerPool {
 public:
  using Work = std::function<void(RewardJob&, std::function<void(Reward)>&)>;
  WorkerPool(int n, Work work) : work_(std::move(work)) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~WorkerPool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void push(RewardJob job, std::function<void(Reward)> done) {
    {
      std::lock_guard lock(mu_);
      queue_.emplace_back(std::move(job), std::move(done));
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::pair<RewardJob, std::function<void(Reward)>> item;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        item = std::move(queue_.front());
        queue_.pop_front();
      }
      work_(item.first, item.second);
    }
  }
  Work work_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<RewardJob, std::function<void(Reward)>>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// --- in process -------------------------------------------------------------------------------------------

class InProcessEnv : public RewardEnv {
 public:
  InProcessEnv(std::unique_ptr<data::Verifier> v, TempDir dir, RewardEnvOptions o)
      : verifier_(std::move(v)), dir_(std::move(dir)), options_(std::move(o)),
        pool_(options_.workers, [this](RewardJob& j, std::function<void(Reward)>& done) { done(verify(j)); }) {}

  void submit(RewardJob job, std::function<void(Reward)> done) override { pool_.push(std::move(job), std::move(done)); }
  std::string describe() const override { return "mooreeval (in process, " + options_.backend + ")"; }

 private:
  Reward verify(const RewardJob& j) {
    const auto file = dir_.path() / ("submission-" + std::to_string(counter_++) + ".txt");
    if (Status st = write_file_atomic(file, j.response); !st.ok()) {
      return reward_of(infra_verdict(j.task_id, "cannot write the submission: " + st.message()));
    }
    auto verdicts = verifier_->verify({{j.task_id, j.task_path, file}}, {});
    std::error_code ec;
    std::filesystem::remove(file, ec);
    return reward_of(verdicts.empty() ? infra_verdict(j.task_id, "the verifier returned nothing") : verdicts[0]);
  }
  std::unique_ptr<data::Verifier> verifier_;
  TempDir dir_;
  RewardEnvOptions options_;
  std::atomic<uint64_t> counter_{0};
  WorkerPool pool_;  // last: its threads stop before the verifier goes
};

// --- service ----------------------------------------------------------------------------------------------

class ServiceEnv : public RewardEnv {
 public:
  explicit ServiceEnv(RewardEnvOptions o)
      : options_(std::move(o)),
        pool_(options_.workers, [this](RewardJob& j, std::function<void(Reward)>& done) { done(evaluate(j)); }) {}

  void submit(RewardJob job, std::function<void(Reward)> done) override { pool_.push(std::move(job), std::move(done)); }
  std::string describe() const override { return options_.endpoint; }

 private:
  // POST /v1/evaluate; connection errors and 5xx are retried with backoff until wait_seconds have passed.
  Reward evaluate(const RewardJob& j) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.wait_seconds);
    const nlohmann::json body = {{"task", j.task_id}, {"candidate", j.response}, {"deadline_seconds", 3600}};
    double backoff = 0.5;
    std::string last = "no attempt";
    for (;;) {
      httplib::Client cli(options_.endpoint);
      cli.set_read_timeout(std::chrono::seconds(3700));
      auto r = cli.Post("/v1/evaluate", body.dump(), "application/json");
      if (r && r->status == 200) {
        auto job = nlohmann::json::parse(r->body, nullptr, false);
        if (!job.is_discarded() && job.contains("verdict") && job["verdict"].is_object()) return reward_of(job["verdict"]);
        return reward_of(infra_verdict(j.task_id, "the service answered without a verdict: " + r->body.substr(0, 200)));
      }
      if (r && r->status >= 400 && r->status < 500) {  // the job itself is wrong (unknown task, too large)
        return reward_of(infra_verdict(j.task_id, "the service rejected the job (HTTP " + std::to_string(r->status) +
                                                      "): " + r->body.substr(0, 300)));
      }
      last = r ? "HTTP " + std::to_string(r->status) : httplib::to_string(r.error());
      if (std::chrono::steady_clock::now() >= give_up) break;
      std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
      backoff = std::min(backoff * 2, 10.0);
    }
    return reward_of(infra_verdict(j.task_id, "the verifier at " + options_.endpoint + " is down (" + last +
                                                  " for " + std::to_string(options_.wait_seconds) + " s)"));
  }
  RewardEnvOptions options_;
  WorkerPool pool_;
};

Status wait_for_health(const RewardEnvOptions& o) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.wait_seconds);
  std::string last;
  for (;;) {
    httplib::Client cli(o.endpoint);
    cli.set_connection_timeout(std::chrono::seconds(5));
    auto r = cli.Get("/healthz");
    if (r && r->status == 200) return {};
    last = r ? "HTTP " + std::to_string(r->status) : httplib::to_string(r.error());
    if (std::chrono::steady_clock::now() >= give_up) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return unavailable("the MooreEval service at " + o.endpoint + " did not answer /healthz within " +
                     std::to_string(static_cast<int>(o.wait_seconds)) + " s (" + last +
                     "); start it with `mooreeval serve` or pass --reward-env mooreeval");
}

}  // namespace

Reward reward_of(const nlohmann::json& verdict) {
  Reward r;
  r.verdict = verdict;
  if (!verdict.is_object() || !verdict.contains("verdict") || !verdict["verdict"].is_string()) {
    r.verdict_class = "infra_error";
    return r;
  }
  r.verdict_class = verdict["verdict"].get<std::string>();
  // docs/verdict.schema.json: reward is {"total", "scheme", parts...}, null for infra_error.
  if (r.verdict_class != "infra_error" && verdict.contains("reward") && verdict["reward"].is_object()) {
    r.score = verdict["reward"].value("total", 0.0);
  }
  return r;
}

Result<std::unique_ptr<RewardEnv>> RewardEnv::create(const RewardEnvOptions& o) {
  if (o.endpoint.starts_with("http://")) {
    MC_RETURN_IF_ERROR(wait_for_health(o));
    return std::unique_ptr<RewardEnv>(std::make_unique<ServiceEnv>(o));
  }
  if (o.endpoint != "mooreeval") return invalid_argument("--reward-env must be mooreeval or http://HOST:PORT");
  data::VerifierSettings s;
  s.backend = o.backend;
  s.workers = 1;  // one job per verify() call; concurrency comes from our own workers
  s.run_slots = o.run_slots > 0 ? o.run_slots : data::default_run_slots(o.backend);
  s.cache_dir = o.cache_dir;
  s.work_root = o.work_root;
  s.seed = o.seed;
  s.build_path = o.build_path;
  auto v = data::Verifier::create(s);
  if (!v.ok()) return unavailable("the verifier (" + o.backend + ") is not usable: " + v.status().message());
  auto dir = TempDir::create("mc-rl-submissions", o.work_root);
  if (!dir.ok()) return dir.status();
  return std::unique_ptr<RewardEnv>(std::make_unique<InProcessEnv>(std::move(*v), std::move(*dir), o));
}

}  // namespace musacoder::train::rl
