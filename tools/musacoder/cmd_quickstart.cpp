// musacoder quickstart: the whole loop on a small scale — verified data, a tiny model from scratch (or a
// pretrained --base-model), SFT,
// GRPO with MooreEval rewards, held-out evaluation before and after (src/quickstart/quickstart.h,
// docs/quickstart.md). Exit 1 when learning did not show (the numbers are printed), 2 bad input, 3 infra.
#include <csignal>
#include <cstdio>
#include <memory>

#include "command.h"
#include "commands.h"
#include "quickstart/quickstart.h"

namespace musacoder::tool {
namespace {

int run_quickstart_command(quickstart::QuickstartOptions& o, bool no_progress) {
  signal(SIGXFSZ, SIG_IGN);  // a file-size limit must fail a save, not kill the process
  o.progress = !no_progress;
  auto log = [](const std::string& line) { std::printf("%s\n", line.c_str()), std::fflush(stdout); };
  auto r = quickstart::run_quickstart(o, log);
  if (!r.ok()) return fail("quickstart", r.status());
  std::printf("\nrun files: %s\ncurves:    %s\nreport:    %s\nsummary:   %s\n", o.out_dir.c_str(),
              r->curves.c_str(), r->report.c_str(), r->summary.c_str());
  if (r->learning_failure.empty()) return 0;
  std::fprintf(stderr, "musacoder quickstart: learning did not show: %s\n", r->learning_failure.c_str());
  std::fprintf(stderr,
               "(docs/quickstart.md: what this run measures, and why the CPU default does not learn yet)\n");
  return 1;
}

}  // namespace

Command add_quickstart_command(CLI::App& app) {
  auto o = std::make_shared<quickstart::QuickstartOptions>();
  auto no_progress = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("quickstart",
                                     "the whole loop on a CPU in minutes: verified data -> tiny model "
                                     "-> SFT -> GRPO with MooreEval rewards -> held-out Pass@k before/after");
  sub->add_option("--out", o->out_dir, "run directory")->capture_default_str();
  sub->add_flag("--overwrite", o->overwrite, "replace a run already in --out");
  sub->add_option("--backend", o->backend, "cpu | cuda: kernels, verifier and model device")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "seed of data, model and sampling")->capture_default_str();
  sub->add_option("--base-model", o->base_model,
                  "start from this pretrained checkpoint (e.g. build/models/smollm2-135m) instead of a tiny "
                  "model trained from scratch");
  sub->add_option("--steps", o->sft_steps, "SFT updates")->capture_default_str();
  sub->add_option("--learning-rate", o->sft_learning_rate,
                  "SFT peak learning rate (default: 3e-3 from scratch, 5e-5 with --base-model)");
  sub->add_option("--max-seq-len", o->max_seq_len, "SFT row length in tokens (a row holds packed pairs)")
      ->capture_default_str();
  sub->add_option("--rl-learning-rate", o->rl_learning_rate,
                  "GRPO learning rate (default: 1e-4 from scratch, 2e-6 with --base-model)");
  sub->add_option("--rl-steps", o->rl_steps, "GRPO steps")->capture_default_str();
  sub->add_option("--rl-prompts", o->rl_prompts_per_step, "GRPO groups per step")->capture_default_str();
  sub->add_option("--rl-samples", o->rl_samples_per_prompt, "GRPO group size (K)")->capture_default_str();
  sub->add_option("--max-new-tokens", o->max_new_tokens,
                  "tokens per answer, evaluation and RL (default: 1024 for cpu kernels, 3072 for cuda)");
  sub->add_option("--train-tasks", o->train_tasks, "synthesized training tasks (verified pairs)")
      ->capture_default_str();
  sub->add_option("--heldout-tasks", o->heldout_tasks, "held-out tasks")->capture_default_str();
  sub->add_option("--samples", o->samples, "samples per held-out task (the k of Pass@k)")
      ->capture_default_str();
  sub->add_option("--temperature", o->temperature, "sampling temperature (evaluation and RL)")
      ->capture_default_str();
  sub->add_option("--hidden-size", o->hidden_size, "model width (multiple of 64; from scratch only)")
      ->capture_default_str();
  sub->add_option("--layers", o->layers, "model layers (from scratch only)")->capture_default_str();
  sub->add_option("--vocab-size", o->vocab_size, "BPE vocabulary trained on the corpus (from scratch only)")
      ->capture_default_str();
  sub->add_option("--verify-workers", o->verify_workers, "concurrent verifications")->capture_default_str();
  sub->add_option("--build-cache", o->build_cache,
                  "verifier build cache (default ~/.cache/mooreeval/builds)");
  sub->add_flag("--no-progress", *no_progress, "no progress bars");
  return {sub, [o, no_progress] { return run_quickstart_command(*o, *no_progress); }};
}

}  // namespace musacoder::tool
