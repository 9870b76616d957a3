#pragma once
// Group-relative advantages for one RL step (DESIGN §1 "GRPO update"): every prompt is sampled K times,
// and each sample's reward is compared with the other samples of its prompt group.
//
//   GRPO     A_i = (r_i − mean) / (std + ε)         std: sample (n−1, default) or population (n)
//   Dr.GRPO  A_i =  r_i − mean                       (no std division; Liu et al. 2025)
//   RLOO     A_i =  r_i − mean_{j≠i} r_j = K/(K−1)·(r_i − mean)
//
// A group whose rewards are all equal gets exactly zero advantage (no learning signal), which is what
// BDR (retry_buffer.h) and MirrorPop (mirror_pop.h) exist to handle.
//
// Thread-safety: pure functions.

#include <cstddef>
#include <span>
#include <vector>

#include "core/check.h"
#include "core/status.h"

namespace musacoder::rl {

enum class AdvantageEstimator {
  kGrpo,    // normalised by the group std (lesson: --algorithm grpo)
  kDrGrpo,  // mean-centred only
  kRloo,    // leave-one-out baseline; needs K ≥ 2
};

enum class StdKind {
  kSample,      // divide the squared deviations by n−1 (torch.std; what TRL and verl use)
  kPopulation,  // divide by n
};

struct AdvantageOptions {
  // Which estimator turns rewards into advantages.
  AdvantageEstimator estimator = AdvantageEstimator::kGrpo;
  // GRPO only: which standard deviation normalises the group. A group of one has std 0.
  StdKind std_kind = StdKind::kSample;
  // GRPO only: added to the std so near-uniform groups do not explode; must be ≥ 0.
  double epsilon = 1e-6;
};

// rewards: (G, K) group-major, i.e. rewards[g*K + i] is sample i of prompt group g; K = group_size.
// Returns advantages with the same layout.
// Errors (invalid): group_size == 0; rewards.size() not a multiple of group_size; a non-finite reward;
// negative or non-finite epsilon; RLOO with group_size < 2. Empty rewards → empty result.
Result<std::vector<double>> group_advantages(std::span<const double> rewards, std::size_t group_size,
                                             const AdvantageOptions& options = {});

}  // namespace musacoder::rl
