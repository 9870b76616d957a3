// Internal to the trainer (src/train/rl/*.cpp only): everything a run holds once set up, and the functions
// that set it up, run one step and save/restore it.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "engine/engine.h"
#include "model/decoder.h"
#include "rl/mirror_pop.h"
#include "rl/mirror_schedule.h"
#include "rl/retry_buffer.h"
#include "train/common/forward.h"
#include "train/common/metrics.h"
#include "train/common/optimizer.h"
#include "train/rl/conversation.h"
#include "train/rl/policy_update.h"
#include "train/rl/reward_env.h"
#include "train/rl/task_set.h"
#include "train/rl/trainer.h"

namespace musacoder::train::rl {

struct RlRun {
  RlOptions o;
  RlHooks hooks;
  torch::Device device{torch::kCPU};
  std::vector<RlTask> tasks;
  std::optional<tokenizer::Tokenizer> tok;
  std::optional<ChatCodec> codec;
  std::optional<model::Decoder> policy, reference, mirror;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<RewardEnv> rewards;
  std::unique_ptr<AdamW> opt;
  std::optional<TrainingForward> forward;
  std::optional<::musacoder::rl::RetryBuffer> bdr;
  std::optional<::musacoder::rl::MirrorPop> pop;
  std::optional<::musacoder::rl::EmaSchedule> ema;
  int64_t step = 0;          // steps done
  bool mirror_ready = false; // the mirror holds a copy (taken at the schedule's start step)
  std::filesystem::path resume_checkpoint;
  std::optional<MetricsLogger> metrics;
  ForwardShape shape;  // the update's forwards: micro-batches and checkpointing from the options
};

Status setup_run(RlRun& r);                      // setup.cpp
Result<Scalars> run_step(RlRun& r);              // step.cpp: one step; returns its metrics
Status save_checkpoint(RlRun& r);                // checkpoint.cpp
Status restore_checkpoint(RlRun& r);             // checkpoint.cpp (after setup_run built everything)
Status save_final_model(RlRun& r);               // checkpoint.cpp

}  // namespace musacoder::train::rl
