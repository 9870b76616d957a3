// The SFT trainer (lesson stage 1): `musacoder train-sft` is a thin wrapper over run_sft().
//
// One optimizer update ("step"):
//   for each of this rank's micro-batches of the step (packing.h: micro-batch i → rank i % world):
//     loss_i = micro_batch_loss_sum(...) / N_step          N_step = trained tokens of the whole step, all ranks
//     backward(loss_i); accumulate grads in fp32
//   all-reduce (sum) the gradients and the loss over ranks   → the gradient of the global per-token mean
//   clip to max_grad_norm (on the device) → AdamW at lr(step) on the owned parameters → broadcast (ZeRO-1)
//   log / evaluate / checkpoint
// Precision: fp32 on CPU; with --bf16 the model's parameters are bf16 (transformers' own bf16 path; no autocast)
// while gradients are summed and the update is done on fp32 master weights with fp32 AdamW moments
// (optimizer.h). See docs/training.md for why not autocast.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::train::sft {

struct SftOptions {
  // --- What to train on
  std::filesystem::path base_model;    // Hugging Face model directory (config.json, safetensors, tokenizer.json)
  std::filesystem::path dataset;       // JSONL (dataset.h)
  std::filesystem::path eval_dataset;  // optional; evaluated every eval_steps and at the end
  std::filesystem::path output_dir;
  std::filesystem::path resume_from;   // a checkpoint-N directory, or a run directory (its newest checkpoint)
  bool overwrite = false;              // replace a run already in output_dir
  // --- Data
  int64_t max_seq_len = 8192;            // tokens per packed row (and per example)
  int64_t per_device_batch_tokens = 0;   // tokens per micro-batch (rows = this / max_seq_len); 0: max_seq_len
  std::string loss_on = "all-assistant"; // all-assistant | last-turn
  std::string too_long = "truncate";     // truncate | drop
  bool skip_bad_rows = false;
  bool packing = true;                   // false: one example per row
  // --- Optimisation
  std::string backend = "cpu";           // cpu | cuda | torch_musa
  bool bf16 = false;                     // bf16 parameters + fp32 master weights (CUDA)
  bool gradient_checkpointing = false;
  int64_t num_train_epochs = 1;
  int64_t max_steps = 0;                 // > 0: the run is this many updates (overrides epochs)
  int64_t stop_after_step = 0;           // > 0: save and stop after this update, schedule unchanged (preemption)
  int64_t gradient_accumulation_steps = 1;
  double learning_rate = 5e-6;
  std::string lr_scheduler = "cosine";   // cosine | linear | constant
  double warmup_ratio = 0.0;
  double min_lr_ratio = 0.0;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_epsilon = 1e-8;
  bool one_pass_adamw = false;           // AdamWOptions::one_pass_kernel (CUDA, bf16/fp16 parameters)
  double max_grad_norm = 1.0;            // 0: no clipping
  uint64_t seed = 42;
  // --- LoRA
  int64_t lora_rank = 0;                 // 0: full fine-tuning
  double lora_alpha = 16.0;
  std::vector<std::string> lora_targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
  bool lora_merge = false;               // also write the merged full model at the end
  // --- Scale-out
  std::string dist_backend = "auto";     // auto | gloo | nccl
  bool zero1 = true;                     // shard optimizer state over ranks (world > 1)
  // --- Output
  int64_t save_steps = 0;                // checkpoint every N updates (0: only at the end)
  int64_t save_total_limit = 0;          // keep the newest N checkpoints (0: all)
  int64_t eval_steps = 0;                // 0: evaluate only at the end (with an eval dataset)
  int64_t logging_steps = 1;
  bool tensorboard = true;
  bool progress_bar = true;              // on a terminal; plain lines otherwise
};

nlohmann::json to_json(const SftOptions& o);

// Checks flag values and combinations (not files). kInvalidArgument naming the flag.
Status validate(const SftOptions& o);

struct SftResult {
  int64_t steps = 0;             // updates done in total (including before a resume)
  double final_loss = 0.0;       // training loss of the last update
  std::filesystem::path final_model;
};

// Runs (or resumes) training. Rank and world size come from the torchrun environment (parallel.h).
Result<SftResult> run_sft(const SftOptions& options);

}  // namespace musacoder::train::sft
