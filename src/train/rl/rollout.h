// Multi-turn rollouts of one step: K trajectories per prompt, each sampled by the engine with the policy's
// live weights, verified as soon as its turn finishes generating (so verifier builds overlap the rest of the
// generation), and — while rl::should_continue says so (a failed turn, fewer than max_turns) — answered with
// the verdict's feedback turn and sampled again with the whole history in context.
//
// infra_error verdicts are re-verified up to `infra_retries` times; a trajectory that still has one is marked
// `dropped` and never enters group statistics (it is not a zero).
//
// Threads: run() blocks the caller; engine callbacks and reward-env workers drive the state machine and share
// it under one mutex. Not re-entrant: one run() at a time per Rollout.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "prompts/prompts.h"
#include "train/rl/conversation.h"
#include "train/rl/reward_env.h"
#include "train/rl/task_set.h"

namespace musacoder::engine {
class Engine;
}

namespace musacoder::train::rl {

// One prompt of the step: a task, and the conversation its K samples start from (a fresh task: [system, user];
// a BDR repair task: the failed attempt and its feedback appended).
struct RolloutPrompt {
  const RlTask* task = nullptr;
  std::vector<prompts::Message> messages;
  bool retry = false;  // a BDR re-sample
};

struct TurnRecord {
  int64_t begin = 0, end = 0;  // this turn's response tokens are ids[begin, end)
  std::string response;        // its text
  Reward reward;
  bool injected = false;       // the response came from RolloutOptions::inject, not the engine
};

struct Trajectory {
  int group = 0, sample = 0;
  std::vector<int32_t> ids;          // prompt · response₁ · tail₁ · … (conversation.h)
  std::vector<float> rollout_logp;   // per token of ids: the engine's raw logprob (0 outside responses / injected)
  std::vector<TurnRecord> turns;
  std::vector<prompts::Message> messages;  // the conversation so far
  int infra_retries = 0;
  bool dropped = false;              // an infra_error survived the retries: out of the group's statistics
  bool context_stop = false;         // ended because another turn would not fit the engine's context
  std::string drop_reason;
  std::vector<double> scores() const;
};

struct RolloutOptions {
  int samples_per_prompt = 8;
  int max_turns = 3;
  bool stop_on_pass = true;
  double temperature = 0.9, top_p = 0.95;
  int64_t max_new_tokens = 1024;
  int infra_retries = 2;
  // A repair turn starts only while the context (the engine's max_model_len) leaves room for this many response
  // tokens (or max_new_tokens if fewer) after the feedback; otherwise the trajectory ends on its last turn.
  int64_t min_turn_tokens = 64;
  uint64_t seed = 42;  // sample seeds derive from (seed, step, group, sample, turn)
  // Test and probe seam: a response to use instead of sampling (task id, step, sample, turn) → text. Its
  // tokens are the tokenizer's encoding of the text; the trainer scores them like any response.
  std::function<std::optional<std::string>(const std::string&, int64_t, int, int)> inject;
};

struct RolloutStats {
  double generate_seconds = 0;     // first submit → last token generated
  double verify_wait_seconds = 0;  // last token generated → last verdict (time spent only waiting for rewards)
  int64_t generated_tokens = 0;
  int64_t verify_jobs = 0, infra_retries = 0;
  int64_t context_stops = 0;       // trajectories that ended because another turn would not fit the context
};

class Rollout {
 public:
  Rollout(engine::Engine& engine, RewardEnv& rewards, const ChatCodec& codec, RolloutOptions options)
      : engine_(engine), rewards_(rewards), codec_(codec), options_(std::move(options)) {}
  // The trajectories of every prompt, group-major (prompt g's K samples at [g·K, (g+1)·K)).
  Result<std::vector<Trajectory>> run(const std::vector<RolloutPrompt>& prompts, int64_t step, RolloutStats& stats);

 private:
  engine::Engine& engine_;
  RewardEnv& rewards_;
  const ChatCodec& codec_;
  RolloutOptions options_;
};

}  // namespace musacoder::train::rl
