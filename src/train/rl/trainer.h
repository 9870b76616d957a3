// The GRPO RL trainer (lesson stage 2): `musacoder train-rl` is a thin wrapper over run_rl().
//
// One step (DESIGN §2; docs/train-rl.md):
//   prompts  = prompts_per_step tasks of this epoch's seeded order (+ BDR repair tasks every bdr_retry_every)
//   traj     = Rollout::run: K samples each from the engine (live policy weights), verdicts as they finish,
//              feedback turns up to max_turns
//   credit   = PrimeEcho turn rewards → group advantages per turn → per-token advantages and masks
//   groups   = BDR: all-fail regular groups buffered (not trained); a recovered retry group joins
//   old/ref  = no-grad logprobs of the policy and the frozen reference (chunked)
//   keep     = MirrorPop: lesson — divergence to the EMA mirror (mirror forward) + group pass rate → skip;
//              paper — mean |log ρ| trainer vs rollout ≤ δ
//   update   = ppo_epochs × (forward, PPO-clip + k3 KL, backward) → clip → AdamW inside engine.update_weights
//   mirror   = EMA on its schedule; metrics; checkpoint every save_steps
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "core/status.h"
#include "train/rl/options.h"

namespace musacoder::train::rl {

// Seams for tests and probes (not reachable from the command line).
struct RlHooks {
  // A response to use instead of sampling for (task id, step, sample index, turn); RolloutOptions::inject.
  std::function<std::optional<std::string>(const std::string&, int64_t, int, int)> inject;
};

struct RlResult {
  int64_t steps = 0;         // steps done in total (including before a resume)
  double final_loss = 0.0;   // loss of the last step's last PPO epoch
  std::filesystem::path final_model;
};

// Runs (or resumes) training on one process.
Result<RlResult> run_rl(const RlOptions& options, const RlHooks& hooks = {});

}  // namespace musacoder::train::rl
