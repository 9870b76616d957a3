#include "train/rl/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "train/rl/run_state.h"

namespace musacoder::train::rl {
namespace {

double value_of(const Scalars& s, const std::string& name) {
  for (const auto& [k, v] : s) {
    if (k == name) return v;
  }
  return 0.0;
}

Status train_loop(RlRun& r, RlResult& result) {
  std::optional<ProgressBar> bar;
  if (r.o.progress_bar) bar.emplace(r.step, r.o.max_steps, isatty(2) == 1);
  const int64_t stop = r.o.stop_after_step > 0 ? std::min(r.o.max_steps, r.o.stop_after_step) : r.o.max_steps;
  while (r.step < stop) {
    const auto t0 = std::chrono::steady_clock::now();
    auto s = run_step(r);
    if (!s.ok()) return s.status();
    s->push_back({"time/step_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
    MC_RETURN_IF_ERROR(r.metrics->log(r.step, "train", *s));
    if (bar) {
      bar->update(r.step, {{"reward", value_of(*s, "reward/mean")}, {"pass@t1", value_of(*s, "pass_rate/first_turn")},
                           {"kl", value_of(*s, "kl")}});
    }
    result.final_loss = value_of(*s, "loss");
    if ((r.o.save_steps > 0 && r.step % r.o.save_steps == 0) || r.step == stop) MC_RETURN_IF_ERROR(save_checkpoint(r));
  }
  if (bar) bar->finish();
  result.steps = r.step;
  return {};
}

}  // namespace

Result<RlResult> run_rl(const RlOptions& options, const RlHooks& hooks) {
  MC_RETURN_IF_ERROR(validate(options));
  RlRun r;
  r.o = options;
  r.hooks = hooks;
  try {
    MC_RETURN_IF_ERROR(setup_run(r));
    std::fprintf(stderr, "train-rl: %zu tasks, K=%d, %d prompts/step, max %d turns, verifier %s%s%s%s%s\n",
                 r.tasks.size(), r.o.samples_per_prompt, r.o.prompts_per_step, r.o.max_turns,
                 r.rewards->describe().c_str(), r.o.enable_prime_echo ? ", PrimeEcho" : "",
                 r.o.enable_bdr ? ", BDR" : "", r.o.enable_mirrorpop ? ", MirrorPop" : "",
                 r.step > 0 ? (", resuming after step " + std::to_string(r.step)).c_str() : "");
    RlResult result;
    MC_RETURN_IF_ERROR(train_loop(r, result));
    if (r.step == r.o.max_steps) MC_RETURN_IF_ERROR(save_final_model(r));
    result.final_model = r.o.output_dir;
    return result;
  } catch (const std::exception& e) {
    return internal_error(std::string("train-rl failed: ") + e.what());
  }
}

}  // namespace musacoder::train::rl
