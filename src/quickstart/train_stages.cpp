// The two trainers as the quickstart runs them: SFT with a cosine decay (a high peak learning rate for a
// model from scratch, a fine-tuning one for a --base-model), then GRPO with all four of the lesson's components on, rewards
// from MooreEval.
#include "quickstart/stages.h"
#include "train/rl/trainer.h"
#include "train/sft/trainer.h"

namespace musacoder::quickstart {
namespace fs = std::filesystem;
namespace {

train::sft::SftOptions sft_options(const QuickstartOptions& o, const fs::path& base, const fs::path& dataset,
                                   const fs::path& out) {
  train::sft::SftOptions s;
  s.base_model = base;
  s.dataset = dataset;
  s.output_dir = out;
  s.max_seq_len = o.max_seq_len;
  s.per_device_batch_tokens = 2 * o.max_seq_len;
  s.backend = o.backend;
  s.max_steps = o.sft_steps;
  s.learning_rate = sft_learning_rate(o);
  s.lr_scheduler = "cosine";
  s.warmup_ratio = 0.03;
  s.seed = o.seed;
  s.logging_steps = 5;
  s.tensorboard = false;
  s.progress_bar = o.progress;
  return s;
}

train::rl::RlOptions rl_options(const QuickstartOptions& o, const fs::path& base, const fs::path& tasks,
                                const fs::path& out) {
  train::rl::RlOptions r;
  r.base_checkpoint = base;
  r.tasks = tasks;
  r.output_dir = out;
  r.reward_env_workers = o.verify_workers;
  r.verifier_backend = o.backend;
  r.verifier_cache_dir = build_cache(o);
  r.verifier_build_path = "lean";  // quickstart.h: a compile error costs no full build
  r.samples_per_prompt = o.rl_samples_per_prompt;
  r.prompts_per_step = o.rl_prompts_per_step;
  r.max_turns = 2;
  r.temperature = o.temperature;
  r.max_new_tokens = max_new_tokens(o);
  r.learning_rate = rl_learning_rate(o);
  r.max_steps = o.rl_steps;
  r.seed = o.seed;
  r.enable_prime_echo = r.enable_bdr = r.enable_mirrorpop = true;
  r.bdr_retry_every = 2;  // a retry round inside a short run
  r.mirrorpop_update_every = 2;
  r.device = o.backend == "cuda" ? "cuda" : "cpu";
  r.tensorboard = false;
  r.progress_bar = o.progress;
  return r;
}

}  // namespace

Result<fs::path> run_sft_stage(const QuickstartOptions& o, const fs::path& base, const fs::path& dataset,
                               const fs::path& out) {
  auto r = train::sft::run_sft(sft_options(o, base, dataset, out));
  if (!r.ok()) return r.status();
  return r->final_model;
}

Result<fs::path> run_rl_stage(const QuickstartOptions& o, const fs::path& base, const fs::path& tasks,
                              const fs::path& out) {
  auto r = train::rl::run_rl(rl_options(o, base, tasks, out));
  if (!r.ok()) return r.status();
  return r->final_model;
}

}  // namespace musacoder::quickstart
