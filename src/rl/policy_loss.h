#pragma once
// Per-token PPO-clip objective and KL-to-reference estimators, and their combination into the GRPO loss
// of one update (DESIGN §1 "GRPO update (clip, KL to reference)").
//
// PPO clip, per token, with ratio ρ = exp(logp − old_logp) and advantage A:
//   loss = −min(ρ·A, clip(ρ, 1 − ε_low, 1 + ε_high)·A)
// The clipped branch is active ("clipped") when A > 0 and ρ > 1 + ε_high, or A < 0 and ρ < 1 − ε_low;
// there the gradient w.r.t. logp is 0, elsewhere it is −A·ρ. ε_high > ε_low is DAPO's "clip-higher".
//
// KL estimators (Schulman, "Approximating KL divergence"), per token, with log r = ref_logp − logp and the
// token sampled from the current policy:
//   k1 = −log r           unbiased, can be negative
//   k2 = ½ (log r)²       biased, low variance
//   k3 = r − 1 − log r    unbiased, ≥ 0 (GRPO's choice, the default)
//
// Total loss = aggregate(pg) + kl_coef · aggregate(kl), aggregate per loss_aggregation.h.
//
// Thread-safety: pure functions.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rl/loss_aggregation.h"
#include "core/check.h"
#include "core/status.h"

namespace musacoder::rl {

struct PpoClipOptions {
  // Lower clip range: ρ is clipped below at 1 − eps_low (matters for A < 0). Must be in [0, 1).
  double eps_low = 0.2;
  // Upper clip range: ρ is clipped above at 1 + eps_high (matters for A > 0); DAPO uses 0.28. Must be ≥ 0.
  double eps_high = 0.2;
};

struct PpoTokenTerm {
  double loss = 0.0;          // −min(ρA, clip(ρ)A)
  double ratio = 1.0;         // ρ
  bool clipped = false;       // the clipped branch is the active one (zero gradient)
  bool clipped_low = false;   // clipped because A < 0 and ρ < 1 − eps_low
  bool clipped_high = false;  // clipped because A > 0 and ρ > 1 + eps_high
  double grad_logp = 0.0;     // ∂loss/∂logp
};

// One token. Inputs are trusted to be finite (policy_loss() validates batches).
PpoTokenTerm ppo_clip_token(double logp, double old_logp, double advantage, const PpoClipOptions& options);

enum class KlEstimator { kK1, kK2, kK3 };

struct KlTokenTerm {
  double value = 0.0;      // the estimate
  double grad_logp = 0.0;  // ∂value/∂logp
};

KlTokenTerm kl_token(double logp, double ref_logp, KlEstimator estimator);

struct KlOptions {
  // Estimator of KL(π‖π_ref) per token.
  KlEstimator estimator = KlEstimator::kK3;
  // Weight of the KL term in the loss (lesson: --kl-coef 0.04). 0 disables it; must be ≥ 0.
  double coef = 0.04;
};

struct PolicyLossOptions {
  // Clip ranges of the surrogate.
  PpoClipOptions clip;
  // KL penalty to the reference policy.
  KlOptions kl;
  // How token terms become a scalar; GRPO's original sequence-mean-then-batch-mean by default.
  LossAggregation aggregation = LossAggregation::kSequenceMeanBatchMean;
};

// Views of one update batch; all token arrays are (B,T) row-major. Not owned.
struct PolicyLossInputs {
  TokenBatchShape shape;
  std::span<const double> logp;        // (B,T) current policy log-prob of each sampled token
  std::span<const double> old_logp;    // (B,T) behaviour (rollout) policy log-prob
  std::span<const double> ref_logp;    // (B,T) reference policy log-prob; may be empty iff kl.coef == 0
  std::span<const double> advantages;  // (B) one per sequence (GRPO) or (B,T) one per token
  std::span<const std::uint8_t> mask;  // (B,T) 1 = response token that is trained
};

struct PolicyLossResult {
  double loss = 0.0;                // pg_loss + kl.coef · kl
  double pg_loss = 0.0;             // aggregated clipped surrogate
  double kl = 0.0;                  // aggregated KL estimate, before the coefficient (0 without ref)
  double clip_fraction = 0.0;       // share of valid tokens on the clipped branch
  double clip_fraction_low = 0.0;   // … of which clipped at 1 − eps_low
  double clip_fraction_high = 0.0;  // … of which clipped at 1 + eps_high
  std::vector<double> grad_logp;    // (B,T) ∂loss/∂logp; 0 under padding
};

// Errors (invalid): a span with the wrong size; a non-finite input under the mask; eps_low outside
// [0, 1) or eps_high < 0; kl.coef < 0; kl.coef > 0 with empty ref_logp.
Result<PolicyLossResult> policy_loss(const PolicyLossInputs& inputs, const PolicyLossOptions& options = {});

}  // namespace musacoder::rl
