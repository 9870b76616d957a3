// The options of `musacoder train-rl` (lesson stage 2): one struct, grouped, defaults here, one comment per
// field. Only tools/musacoder/cmd_train_rl.cpp reads flags and config files; everything below takes RlOptions.
// The resolved options (seeds included) are saved with every checkpoint (to_json).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::train::rl {

struct RlOptions {
  // --- What to train and on what
  std::filesystem::path base_checkpoint;  // Hugging Face model dir with tokenizer.json and a chat template
  std::filesystem::path tasks;            // KernelBench-format task folder (bundled suite, checkout, synthesized)
  std::filesystem::path output_dir;
  std::filesystem::path resume_from;      // checkpoint-N or a run dir (its newest checkpoint)
  bool overwrite = false;                 // replace a run already in output_dir
  // --- Rewards (the verifier)
  std::string reward_env = "mooreeval";   // "mooreeval" (in-process) or http://HOST:PORT (the service)
  int reward_env_workers = 64;            // concurrent verifications
  int reward_env_run_slots = 0;           // in process: candidates on the device at once (0: by backend)
  std::string verifier_backend = "cpu";   // --backend: cpu | cuda | musa (what kernels must run on)
  double verifier_wait_seconds = 120;     // service mode: how long a step waits for a down verifier
  int infra_retries = 2;                  // re-verifications of an infra_error before the sample is dropped
  std::filesystem::path verifier_cache_dir;  // in process: build cache shared across runs (empty: <output_dir>/build-cache)
  std::string verifier_build_path = "auto";  // in process: auto | lean | full (--build-path; docs/build.md)
  // --- Rollout
  int samples_per_prompt = 8;             // K (GRPO group size)
  int prompts_per_step = 4;               // regular groups per step (BDR retries come on top)
  int max_turns = 3;                      // multi-turn repair: turns per trajectory, stop on a pass
  double temperature = 0.9;
  double top_p = 0.95;
  int64_t max_new_tokens = 1024;          // per turn
  // --- Algorithm
  std::string algorithm = "grpo";         // grpo | dr_grpo | rloo
  double kl_coef = 0.04;                  // k3 KL to the frozen reference (0: no reference model)
  double clip_low = 0.2, clip_high = 0.2; // PPO-clip ε_low / ε_high
  int ppo_epochs = 1;                     // passes over each step's batch
  double learning_rate = 1e-6;
  double max_grad_norm = 1.0;             // 0: no clipping
  double weight_decay = 0.0;
  bool one_pass_adamw = false;            // AdamWOptions::one_pass_kernel (CUDA, bf16/fp16 parameters)
  int64_t max_steps = 100;                // updates in the run
  uint64_t seed = 42;
  // --- PrimeEcho
  bool enable_prime_echo = false;         // off: each turn's own score is its reward
  double prime_echo_gamma = 0.7;
  double prime_echo_eta = 0.5;
  std::string prime_echo_mode = "lesson"; // lesson | paper
  // --- Buffered Dynamic Retry
  bool enable_bdr = false;
  int64_t bdr_buffer_size = 4096;
  int64_t bdr_max_stale_epochs = 5;
  int64_t bdr_retry_every = 4;
  int64_t bdr_max_retries_per_step = 4;   // buffered prompts re-sampled per retry round
  // --- MirrorPop
  bool enable_mirrorpop = false;
  double mirrorpop_tau = 0.02;
  std::string mirrorpop_mode = "lesson";  // lesson | paper
  std::string mirrorpop_ema = "same";     // where the mirror lives: same (the policy's device) | cpu
  int64_t mirrorpop_update_every = 10;    // steps between EMA updates of the mirror
  double mirrorpop_decay = 0.5;           // weight of the old mirror per update
  double mirrorpop_delta = 0.05;          // paper mode: tolerated mean |log ρ| (trainer vs rollout)
  // --- Model / precision
  std::string device = "cpu";             // --device: where the policy trains and generates: cpu | cuda
  bool bf16 = false;                      // bf16 parameters + fp32 master weights (GPU)
  int64_t lora_rank = 0;                  // 0: full fine-tuning
  double lora_alpha = 16.0;
  std::vector<std::string> lora_targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
  double kv_cache_gb = 0;  // engine KV cache in GiB (0: kv_cache_memory_fraction on CUDA, 1 GiB on CPU)
  double kv_cache_memory_fraction =
      0.3;  // share of free GPU memory for the KV cache when kv_cache_gb is 0: the
            // policy's update needs the rest (the engine alone defaults to 0.85)
  int64_t update_batch_tokens = 16384;  // padded tokens per forward of the update (rows × longest row); the
                                        // gradients of the groups add up to the whole batch's
  bool gradient_checkpointing = false;  // recompute each layer in the update's backward
  bool rollout_cuda_graphs = true;        // the engine replays decode steps from CUDA graphs: they read the
                                          // policy's weights where the update writes them (in place)
  int64_t max_model_len = 0;              // engine context for prompt + all turns (0: max_position_embeddings);
                                          // a repair turn that would not fit ends its trajectory instead
  // --- Output
  int64_t save_steps = 0;                 // checkpoint every N steps (0: only at the end)
  int64_t save_total_limit = 0;           // keep the newest N checkpoints (0: all)
  int64_t stop_after_step = 0;            // > 0: save and stop after this step (preemption)
  bool tensorboard = true;
  bool progress_bar = true;
};

nlohmann::json to_json(const RlOptions& o);

// Checks values and combinations (not files). kInvalidArgument naming the flag.
Status validate(const RlOptions& o);

}  // namespace musacoder::train::rl
