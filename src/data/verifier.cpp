// The adapter onto eval/ (Evaluator + run_batch).
#include "data/verifier.h"

#include "mooreeval/compile/toolchain.h"
#include "mooreeval/pipeline/batch.h"
#include "mooreeval/pipeline/evaluator.h"
#include "mooreeval/runner/runner.h"
#include "sandbox/sandbox.h"
#include "mooreeval/task/task.h"

namespace musacoder::data {
namespace {

class MooreEvalVerifier : public Verifier {
 public:
  MooreEvalVerifier(eval::EvalOptions o, int workers) : evaluator_(std::move(o)), workers_(workers) {}

  Status prepare() { return evaluator_.prepare(); }

  std::vector<nlohmann::json> verify(const std::vector<VerifyJob>& jobs,
                                     const std::function<void(std::size_t, const nlohmann::json&)>& on_done) override {
    std::vector<eval::BatchJob> batch;
    std::vector<std::size_t> where;  // batch index -> job index
    std::vector<nlohmann::json> out(jobs.size());
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      auto task = task::load_task(jobs[i].task_path, jobs[i].task_id);
      if (!task.ok()) {
        out[i] = {{"schema", "mooreeval.verdict/1"}, {"task", jobs[i].task_id}, {"verdict", "infra_error"},
                  {"message", task.status().message()}, {"stage", "task"}};
        if (on_done) on_done(i, out[i]);
        continue;
      }
      batch.push_back({*task, jobs[i].submission, jobs[i].task_id});
      where.push_back(i);
    }
    eval::run_batch(evaluator_, batch, workers_, [&](std::size_t b, const eval::Verdict& v) {
      out[where[b]] = eval::to_json(v);
      if (on_done) on_done(where[b], out[where[b]]);
    });
    return out;
  }

  std::string version() const override { return "mooreeval.verdict/1"; }

 private:
  eval::Evaluator evaluator_;
  int workers_;
};

}  // namespace

Result<std::unique_ptr<Verifier>> Verifier::create(const VerifierSettings& s) {
  eval::EvalOptions o;
  auto backend = build::parse_backend(s.backend);
  if (!backend.ok()) return backend.status();
  o.backend = *backend;
  o.workers = s.workers;
  o.run_slots = s.run_slots;
  o.warmup_iters = s.warmup_iters;
  o.benchmark_iters = s.benchmark_iters;
  o.max_build = s.max_build;
  o.max_run = s.max_run;
  o.seed = s.seed;
  o.cpu_threads = s.cpu_threads;
  o.cache_dir = s.cache_dir;
  o.work_root = s.work_root;
  o.runner.python = s.python;
  auto runner_dir = run::locate_runner_dir(s.runner_dir.string());
  if (!runner_dir.ok()) return runner_dir.status();
  o.runner.runner_dir = *runner_dir;
  auto mode = sandbox::parse_sandbox_mode(s.sandbox);
  if (!mode.ok()) return mode.status();
  o.sandbox.mode = *mode;
  auto v = std::make_unique<MooreEvalVerifier>(std::move(o), s.workers);
  if (Status st = v->prepare(); !st.ok()) return st;
  return std::unique_ptr<Verifier>(std::move(v));
}

}  // namespace musacoder::data
