// The adapter onto the verifier's front door (mooreeval/mooreeval.h).
#include "data/verifier.h"

#include "mooreeval/mooreeval.h"

namespace musacoder::data {
namespace {

class MooreEvalVerifier : public Verifier {
 public:
  explicit MooreEvalVerifier(std::unique_ptr<mooreeval::Evaluator> evaluator)
      : evaluator_(std::move(evaluator)) {}

  std::vector<nlohmann::json> verify(
      const std::vector<VerifyJob>& jobs,
      const std::function<void(std::size_t, const nlohmann::json&)>& on_done) override {
    std::vector<mooreeval::Submission> batch;
    std::vector<std::size_t> where;  // batch index -> job index
    std::vector<nlohmann::json> out(jobs.size());
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      auto task = mooreeval::load_task(jobs[i].task_path, jobs[i].task_id);
      if (!task.ok()) {
        out[i] = {{"schema", "mooreeval.verdict/1"},
                  {"task", jobs[i].task_id},
                  {"verdict", "infra_error"},
                  {"message", task.status().message()},
                  {"stage", "task"}};
        if (on_done) on_done(i, out[i]);
        continue;
      }
      batch.push_back({*task, "", jobs[i].submission});
      where.push_back(i);
    }
    evaluator_->evaluate_batch(batch, [&](std::size_t b, const mooreeval::Verdict& v) {
      out[where[b]] = mooreeval::to_json(v);
      if (on_done) on_done(where[b], out[where[b]]);
    });
    return out;
  }

  std::string version() const override { return "mooreeval.verdict/1"; }

 private:
  std::unique_ptr<mooreeval::Evaluator> evaluator_;
};

}  // namespace

Result<std::unique_ptr<Verifier>> Verifier::create(const VerifierSettings& s) {
  mooreeval::Options o;
  o.compile.backend = s.backend;
  o.compile.cache_dir = s.cache_dir;
  o.compile.build_path = s.build_path;
  o.concurrency.workers = s.workers;
  o.concurrency.run_slots = s.run_slots;
  o.timing.warmup_iters = s.warmup_iters;
  o.timing.benchmark_iters = s.benchmark_iters;
  o.deadlines.max_build = s.max_build;
  o.deadlines.max_run = s.max_run;
  o.check.seed = s.seed;
  o.runner.cpu_threads = s.cpu_threads;
  o.runner.work_root = s.work_root;
  o.runner.python = s.python;
  o.runner.runner_dir = s.runner_dir;
  auto mode = sandbox::parse_sandbox_mode(s.sandbox);
  if (!mode.ok()) return mode.status();
  o.sandbox.mode = *mode;
  auto evaluator = mooreeval::Evaluator::create(std::move(o));
  if (!evaluator.ok()) return evaluator.status();
  return std::unique_ptr<Verifier>(std::make_unique<MooreEvalVerifier>(std::move(*evaluator)));
}

}  // namespace musacoder::data
