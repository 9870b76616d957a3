// Credit assignment of one step: PrimeEcho turn rewards and group advantages per turn, as per-token
// advantages and a loss mask over each trajectory's tokens.
//
// Per trajectory, turn rewards r_j: with PrimeEcho, rl::prime_echo_rewards(turn scores) (lesson: turn 1 gets
// s₀ + γ·η·Σδ, turn j ≥ 2 gets (1−η)·δ_j; paper: [R, 0, …] with only turn 1 trained); without it each turn's own
// score. Group advantages per turn index: turn j's advantages are rl::group_advantages over the rewards of
// the group's kept trajectories that reached turn j (so repaired turns are compared with repaired turns);
// a turn reached by fewer than 2 trajectories has no baseline and gets advantage 0. Dropped (infra_error)
// trajectories take no part; a group with fewer than 2 kept trajectories is skipped whole.
//
// Token masks: a token is trained iff it belongs to a response of a turn whose PrimeEcho train_mask is 1;
// prompt and feedback tokens are never trained. turn_of_token is −1 outside responses.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "rl/advantages.h"
#include "rl/prime_echo.h"
#include "train/rl/rollout.h"

namespace musacoder::train::rl {

struct CreditOptions {
  bool prime_echo = true;  // false: turn reward = turn score, every turn trained
  ::musacoder::rl::PrimeEchoOptions echo;
  ::musacoder::rl::AdvantageOptions advantage;
};

struct SampleCredit {
  std::vector<double> turn_reward;      // per turn
  std::vector<double> turn_advantage;   // per turn
  std::vector<int> turn_of_token;       // per token of ids: −1 (prompt/feedback) or the turn index
  std::vector<uint8_t> mask;            // per token: 1 = trained
  std::vector<double> advantage;        // per token (0 where mask is 0)
  bool in_update = false;               // the sample's group joined the update (not dropped, ≥ 2 kept)
};

// One SampleCredit per trajectory (same order). K = samples per prompt; trajectories group-major.
Result<std::vector<SampleCredit>> assign_credit(const std::vector<Trajectory>& traj, int k, const CreditOptions& o);

// Turn-of-token and mask of one trajectory from its turn ranges and per-turn train flags.
void token_turns(const Trajectory& t, const std::vector<uint8_t>& turn_trained, SampleCredit& out);

}  // namespace musacoder::train::rl
