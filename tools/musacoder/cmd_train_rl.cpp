// musacoder train-rl: GRPO with MooreEval rewards (lesson stage 2) — flags → train::rl::RlOptions → run_rl.
//   musacoder train-rl --base-checkpoint DIR --tasks DIR --reward-env mooreeval --reward-env-workers 64
//       --enable-prime-echo --prime-echo-gamma 0.7 --prime-echo-eta 0.5 --enable-bdr --bdr-buffer-size 4096
//       --bdr-max-stale-epochs 5 --enable-mirrorpop --mirrorpop-tau 0.02 --algorithm grpo --kl-coef 0.04 --bf16
//       --output-dir DIR
// --config FILE.toml sets any flag by its long name (required ones included); flags on the command line win.
// docs/train-rl.md.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "commands.h"
#include "config_file.h"
#include "train/rl/trainer.h"

namespace musacoder::tool {
namespace {

struct TrainRlFlags {
  train::rl::RlOptions o;
  std::string base_checkpoint, tasks, output_dir, resume_from, config_file;
};

void add_io_flags(CLI::App* s, TrainRlFlags& f) {
  s->add_option("--base-checkpoint", f.base_checkpoint, "Hugging Face model directory (with a chat template)");
  s->add_option("--tasks", f.tasks, "folder of KernelBench-format tasks (bundled tasks/, a checkout, synthesized)");
  s->add_option("--output-dir", f.output_dir, "run directory (checkpoints, metrics, samples, final model)");
  s->add_option("--resume-from", f.resume_from, "checkpoint-N directory or run directory to resume");
  s->add_flag("--overwrite", f.o.overwrite, "replace a run already in --output-dir");
  s->add_option("--reward-env", f.o.reward_env, "mooreeval (in process) or http://HOST:PORT (MooreEval service)")
      ->capture_default_str();
  s->add_option("--reward-env-workers", f.o.reward_env_workers, "verifications in flight")->capture_default_str();
  s->add_option("--reward-env-run-slots", f.o.reward_env_run_slots,
                "in process: candidates on the device at once (0: 4 on cuda/musa, 1 on cpu)")
      ->capture_default_str();
  s->add_option("--backend", f.o.verifier_backend, "what kernels run on in the verifier: cpu | cuda | musa")
      ->capture_default_str();
  s->add_option("--verifier-wait-seconds", f.o.verifier_wait_seconds,
                "service mode: how long a down verifier is retried before the step fails")->capture_default_str();
  s->add_option("--build-path", f.o.verifier_build_path, "verifier build path: auto | lean | full (docs/build.md)")
      ->capture_default_str();
  s->add_option("--verifier-cache-dir", f.o.verifier_cache_dir,
                "in-process verifier's build cache (default: OUTPUT_DIR/build-cache)");
  s->add_option("--infra-retries", f.o.infra_retries, "re-verifications of an infra_error verdict")
      ->capture_default_str();
}

void add_rollout_flags(CLI::App* s, TrainRlFlags& f) {
  s->add_option("--samples-per-prompt", f.o.samples_per_prompt, "K: samples per prompt (group size)")
      ->capture_default_str();
  s->add_option("--prompts-per-step", f.o.prompts_per_step)->capture_default_str();
  s->add_option("--max-turns", f.o.max_turns, "multi-turn repair: turns per trajectory")->capture_default_str();
  s->add_option("--temperature", f.o.temperature)->capture_default_str();
  s->add_option("--top-p", f.o.top_p)->capture_default_str();
  s->add_option("--max-new-tokens", f.o.max_new_tokens, "per turn")->capture_default_str();
}

void add_algorithm_flags(CLI::App* s, TrainRlFlags& f) {
  s->add_option("--algorithm", f.o.algorithm, "grpo | dr_grpo | rloo")->capture_default_str();
  s->add_option("--kl-coef", f.o.kl_coef, "k3 KL to the frozen reference (0: none)")->capture_default_str();
  s->add_option("--clip-low", f.o.clip_low)->capture_default_str();
  s->add_option("--clip-high", f.o.clip_high)->capture_default_str();
  s->add_option("--ppo-epochs", f.o.ppo_epochs)->capture_default_str();
  s->add_option("--learning-rate", f.o.learning_rate)->capture_default_str();
  s->add_option("--max-grad-norm", f.o.max_grad_norm, "0 = no clipping")->capture_default_str();
  s->add_option("--weight-decay", f.o.weight_decay)->capture_default_str();
  s->add_flag("--one-pass-adamw", f.o.one_pass_adamw,
              "CUDA, bf16/fp16: the optimizer step as one kernel (docs/training.md)");
  s->add_option("--max-steps", f.o.max_steps)->capture_default_str();
  s->add_option("--seed", f.o.seed)->capture_default_str();
  s->add_flag("--enable-prime-echo", f.o.enable_prime_echo, "PrimeEcho multi-turn credit");
  s->add_option("--prime-echo-gamma", f.o.prime_echo_gamma)->capture_default_str();
  s->add_option("--prime-echo-eta", f.o.prime_echo_eta)->capture_default_str();
  s->add_option("--prime-echo-mode", f.o.prime_echo_mode, "lesson | paper")->capture_default_str();
  s->add_flag("--enable-bdr", f.o.enable_bdr, "Buffered Dynamic Retry of all-fail groups");
  s->add_option("--bdr-buffer-size", f.o.bdr_buffer_size)->capture_default_str();
  s->add_option("--bdr-max-stale-epochs", f.o.bdr_max_stale_epochs)->capture_default_str();
  s->add_option("--bdr-retry-every", f.o.bdr_retry_every, "steps between retry rounds")->capture_default_str();
  s->add_option("--bdr-max-retries-per-step", f.o.bdr_max_retries_per_step)->capture_default_str();
  s->add_flag("--enable-mirrorpop", f.o.enable_mirrorpop, "MirrorPop: skip samples the policy has learned");
  s->add_option("--mirrorpop-tau", f.o.mirrorpop_tau)->capture_default_str();
  s->add_option("--mirrorpop-mode", f.o.mirrorpop_mode, "lesson | paper")->capture_default_str();
  s->add_option("--mirrorpop-ema", f.o.mirrorpop_ema, "where the mirror lives: same | cpu")->capture_default_str();
  s->add_option("--mirrorpop-update-every", f.o.mirrorpop_update_every)->capture_default_str();
  s->add_option("--mirrorpop-decay", f.o.mirrorpop_decay)->capture_default_str();
  s->add_option("--mirrorpop-delta", f.o.mirrorpop_delta, "paper mode: tolerated mean |log ratio|")
      ->capture_default_str();
}

void add_run_flags(CLI::App* s, TrainRlFlags& f) {
  s->add_option("--device", f.o.device, "where the policy trains and generates: cpu | cuda")->capture_default_str();
  s->add_flag("--bf16", f.o.bf16, "bf16 parameters with fp32 master weights and AdamW state");
  s->add_option("--lora-rank", f.o.lora_rank, "LoRA rank (0 = full fine-tuning; train-rl: full only for now)")
      ->capture_default_str();
  s->add_option("--lora-alpha", f.o.lora_alpha)->capture_default_str();
  s->add_option("--lora-targets", f.o.lora_targets)->delimiter(',')->capture_default_str();
  s->add_option("--kv-cache-gb", f.o.kv_cache_gb,
                "engine KV cache in GiB (0: --kv-cache-memory-fraction on CUDA)")
      ->capture_default_str();
  s->add_option(
       "--update-batch-tokens", f.o.update_batch_tokens,
       "padded tokens per forward of the update (rows x longest row); the groups' gradients add up to the "
       "whole batch's")
      ->capture_default_str();
  s->add_flag("--gradient-checkpointing", f.o.gradient_checkpointing,
              "recompute each layer in the update's backward");
  s->add_flag("!--no-rollout-cuda-graphs", f.o.rollout_cuda_graphs, "decode rollouts eagerly (no CUDA graphs)");
  s->add_option("--kv-cache-memory-fraction", f.o.kv_cache_memory_fraction,
                "share of free GPU memory for the engine's KV cache (the update needs the rest)")
      ->capture_default_str();
  s->add_option("--max-model-len", f.o.max_model_len,
                "engine context for prompt + all turns (0 = the model's max_position_embeddings); a repair turn "
                "that would not fit ends its trajectory")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  s->add_option("--save-steps", f.o.save_steps, "checkpoint every N steps (0 = at the end)")->capture_default_str();
  s->add_option("--save-total-limit", f.o.save_total_limit)->capture_default_str();
  s->add_option("--stop-after-step", f.o.stop_after_step, "checkpoint and stop after this step");
  s->add_flag("!--no-tensorboard", f.o.tensorboard, "no TensorBoard event files");
  s->add_flag("!--no-progress", f.o.progress_bar, "no progress output");
}

int run_train_rl(TrainRlFlags& f) {
  signal(SIGXFSZ, SIG_IGN);  // a file-size limit must fail the save, not kill the process
  f.o.base_checkpoint = f.base_checkpoint;
  f.o.tasks = f.tasks;
  f.o.output_dir = f.output_dir;
  f.o.resume_from = f.resume_from;
  auto r = train::rl::run_rl(f.o);
  if (!r.ok()) return fail("train-rl", r.status());
  std::fprintf(stderr, "train-rl: %lld steps; model in %s\n", static_cast<long long>(r->steps),
               r->final_model.c_str());
  return 0;
}

}  // namespace

Command add_train_rl_command(CLI::App& app) {
  auto flags = std::make_shared<TrainRlFlags>();
  CLI::App* sub = app.add_subcommand("train-rl", "GRPO on kernel tasks with MooreEval rewards, multi-turn repair, "
                                                 "PrimeEcho, BDR and MirrorPop (resumable)");
  sub->add_option("--config", flags->config_file, "TOML file whose keys are flag names; command-line flags win");
  add_io_flags(sub, *flags);
  add_rollout_flags(sub, *flags);
  add_algorithm_flags(sub, *flags);
  add_run_flags(sub, *flags);
  take_last_values(sub);
  return {sub, [flags, sub] {
            return run_with_config("train-rl", sub, flags->config_file, [&] { return run_train_rl(*flags); });
          }};
}

}  // namespace musacoder::tool
