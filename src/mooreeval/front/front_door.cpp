// mooreeval::Evaluator: the pipeline's Evaluator behind a pimpl, plus a batch runner and a
// submission queue served by concurrency.workers threads.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "core/files.h"
#include "mooreeval/front/options_map.h"
#include "mooreeval/mooreeval.h"
#include "mooreeval/runner/runner.h"

namespace musacoder::mooreeval {

Result<Task> load_task(const std::filesystem::path& file, const std::string& id) {
  return task::load_task(file, id);
}

// The submission queue: jobs run in order, `workers` at a time; threads start with the first job.
class SubmitQueue {
 public:
  using Run = std::function<void()>;
  explicit SubmitQueue(int workers) : workers_(std::max(1, workers)) {}
  ~SubmitQueue() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void push(Run run) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(run));
      ++pending_;
      if (threads_.empty())
        for (int i = 0; i < workers_; ++i) threads_.emplace_back([this] { serve(); });
    }
    wake_.notify_one();
  }
  void wait_idle() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return pending_ == 0; });
  }

 private:
  // Takes jobs until stopping with an empty queue (queued jobs always run).
  void serve() {
    for (;;) {
      Run run;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        run = std::move(jobs_.front());
        jobs_.pop_front();
      }
      run();
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) idle_.notify_all();
    }
  }
  const int workers_;
  std::mutex mu_;  // guards jobs_, pending_, stopping_, threads_
  std::condition_variable wake_, idle_;
  std::deque<Run> jobs_;
  std::size_t pending_ = 0;  // queued or running
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

struct Evaluator::Impl {
  Impl(Options o, eval::EvalOptions eo) : options(std::move(o)), pipeline(std::move(eo)),
                                          queue(options.concurrency.workers) {}
  Verdict evaluate(const Submission& s) {
    if (s.file.empty()) return pipeline.evaluate(s.task, s.response);
    // Read a little over the limit, so an oversized submission is reported as such.
    auto text = read_file(s.file, pipeline.options().max_submission_bytes + 1);
    return text.ok() ? pipeline.evaluate(s.task, *text) : pipeline.reject_submission(s.task, text.status().message());
  }
  Options options;
  eval::Evaluator pipeline;
  SubmitQueue queue;  // declared last: destroyed (drained) first
};

Result<std::unique_ptr<Evaluator>> Evaluator::create(Options options) {
  auto dir = run::locate_runner_dir(options.runner.runner_dir.string());
  if (!dir.ok()) return dir.status();
  options.runner.runner_dir = *dir;
  auto eo = to_eval_options(options);
  if (!eo.ok()) return eo.status();
  auto impl = std::make_unique<Impl>(std::move(options), std::move(*eo));
  if (Status st = impl->pipeline.prepare(); !st.ok()) return st;
  return std::unique_ptr<Evaluator>(new Evaluator(std::move(impl)));
}

Evaluator::Evaluator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Evaluator::~Evaluator() = default;

Verdict Evaluator::evaluate(const Task& task, std::string_view response) {
  return impl_->pipeline.evaluate(task, response);
}

Verdict Evaluator::evaluate(const Submission& submission) { return impl_->evaluate(submission); }

std::vector<Verdict> Evaluator::evaluate_batch(const std::vector<Submission>& submissions,
                                               const std::function<void(std::size_t, const Verdict&)>& on_done) {
  std::vector<Verdict> verdicts(submissions.size());
  std::atomic<std::size_t> next{0};
  std::mutex done_mu;  // serialises on_done and the writes to verdicts
  auto work = [&] {
    for (std::size_t i = next++; i < submissions.size(); i = next++) {
      Verdict v = impl_->evaluate(submissions[i]);
      std::lock_guard<std::mutex> lock(done_mu);
      verdicts[i] = std::move(v);
      if (on_done) on_done(i, verdicts[i]);
    }
  };
  std::vector<std::thread> pool;
  for (int w = 0; w < std::max(1, impl_->options.concurrency.workers); ++w) pool.emplace_back(work);
  for (auto& t : pool) t.join();
  return verdicts;
}

void Evaluator::submit(Submission submission, std::function<void(Verdict)> done) {
  impl_->queue.push([impl = impl_.get(), s = std::move(submission), done = std::move(done)] {
    Verdict v = impl->evaluate(s);
    if (done) done(std::move(v));
  });
}

std::future<Verdict> Evaluator::submit(Submission submission) {
  auto promise = std::make_shared<std::promise<Verdict>>();
  std::future<Verdict> future = promise->get_future();
  submit(std::move(submission), [promise](Verdict v) { promise->set_value(std::move(v)); });
  return future;
}

void Evaluator::wait_idle() { impl_->queue.wait_idle(); }

const Options& Evaluator::options() const { return impl_->options; }

}  // namespace musacoder::mooreeval
