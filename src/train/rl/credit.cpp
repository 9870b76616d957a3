#include "train/rl/credit.h"

#include <algorithm>

namespace musacoder::train::rl {
namespace mrl = ::musacoder::rl;

void token_turns(const Trajectory& t, const std::vector<uint8_t>& turn_trained, SampleCredit& out) {
  out.turn_of_token.assign(t.ids.size(), -1);
  out.mask.assign(t.ids.size(), 0);
  for (std::size_t j = 0; j < t.turns.size(); ++j) {
    for (int64_t p = t.turns[j].begin; p < t.turns[j].end; ++p) {
      out.turn_of_token[static_cast<std::size_t>(p)] = static_cast<int>(j);
      out.mask[static_cast<std::size_t>(p)] = turn_trained[j];
    }
  }
}

namespace {

Status turn_rewards(const Trajectory& t, const CreditOptions& o, SampleCredit& c, std::vector<uint8_t>& trained) {
  const auto scores = t.scores();
  if (o.prime_echo) {
    auto r = mrl::prime_echo_rewards(scores, o.echo);
    if (!r.ok()) return invalid_argument("PrimeEcho: " + r.status().message());
    c.turn_reward = r.value().turn_reward;
    trained = r.value().train_mask;
  } else {
    c.turn_reward = scores;
    trained.assign(scores.size(), 1);
  }
  return {};
}

// Advantages of turn j over the group's kept members that reached it.
Status turn_advantages(std::vector<SampleCredit>& c, const std::vector<int>& members, std::size_t j,
                       const CreditOptions& o) {
  std::vector<double> r;
  std::vector<int> who;
  for (int i : members) {
    if (c[static_cast<std::size_t>(i)].turn_reward.size() > j) {
      r.push_back(c[static_cast<std::size_t>(i)].turn_reward[j]);
      who.push_back(i);
    }
  }
  if (who.size() < 2) return {};  // no baseline: advantage stays 0
  auto a = mrl::group_advantages(r, r.size(), o.advantage);
  if (!a.ok()) return invalid_argument("advantages: " + a.status().message());
  for (std::size_t m = 0; m < who.size(); ++m) c[static_cast<std::size_t>(who[m])].turn_advantage[j] = a.value()[m];
  return {};
}

}  // namespace

Result<std::vector<SampleCredit>> assign_credit(const std::vector<Trajectory>& traj, int k, const CreditOptions& o) {
  if (k < 1 || traj.size() % static_cast<std::size_t>(k) != 0) return invalid_argument("trajectories are not K-grouped");
  std::vector<SampleCredit> c(traj.size());
  std::vector<std::vector<uint8_t>> trained(traj.size());
  for (std::size_t i = 0; i < traj.size(); ++i) {
    if (!traj[i].dropped) MC_RETURN_IF_ERROR(turn_rewards(traj[i], o, c[i], trained[i]));
    c[i].turn_advantage.assign(c[i].turn_reward.size(), 0.0);
    if (trained[i].empty()) trained[i].assign(traj[i].turns.size(), 0);
  }
  for (std::size_t g = 0; g < traj.size(); g += static_cast<std::size_t>(k)) {
    std::vector<int> members;
    std::size_t turns = 0;
    for (std::size_t i = g; i < g + static_cast<std::size_t>(k); ++i) {
      if (!traj[i].dropped) members.push_back(static_cast<int>(i));
      turns = std::max(turns, c[i].turn_reward.size());
    }
    if (members.size() < 2) continue;
    for (std::size_t j = 0; j < turns; ++j) MC_RETURN_IF_ERROR(turn_advantages(c, members, j, o));
    for (int i : members) c[static_cast<std::size_t>(i)].in_update = true;
  }
  for (std::size_t i = 0; i < traj.size(); ++i) {
    if (!c[i].in_update) trained[i].assign(traj[i].turns.size(), 0);
    token_turns(traj[i], trained[i], c[i]);
    c[i].advantage.assign(traj[i].ids.size(), 0.0);
    for (std::size_t p = 0; p < traj[i].ids.size(); ++p) {
      if (c[i].mask[p]) c[i].advantage[p] = c[i].turn_advantage[static_cast<std::size_t>(c[i].turn_of_token[p])];
    }
  }
  return c;
}

}  // namespace musacoder::train::rl
