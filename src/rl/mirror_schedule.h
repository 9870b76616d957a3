#pragma once
// The mirror policy of MirrorPop (DESIGN §5): an exponential moving average of earlier checkpoints of the
// policy. The trainer owns the parameters; this says when to fold the current weights into the mirror and
// with what decay, and does the fold on plain float buffers.
//
//   at step == start_step:                          mirror ← policy            (decay 0: a copy)
//   at step == start_step + j·update_every (j ≥ 1): mirror ← decay·mirror + (1 − decay)·policy
//   otherwise:                                      leave the mirror alone
//
// With update_every = u and decay = d the mirror lags the policy by about u·(1 + d/(1 − d)) steps.
//
// Thread-safety: EmaSchedule is immutable after create(); ema_update touches only its arguments.

#include <cstddef>
#include <optional>
#include <span>

#include "core/check.h"
#include "core/status.h"

namespace musacoder::rl {

struct EmaScheduleOptions {
  // First step at which the mirror is taken (a plain copy of the policy).
  std::size_t start_step = 0;
  // Steps between mirror updates after start_step. ≥ 1.
  std::size_t update_every = 10;
  // Weight of the old mirror in each update. In [0, 1).
  double decay = 0.5;
};

class EmaSchedule {
 public:
  // Errors (invalid): update_every == 0; decay outside [0, 1).
  static Result<EmaSchedule> create(const EmaScheduleOptions& options = {});

  // The decay to use at `step`, or nullopt when the mirror is not updated at this step.
  std::optional<double> decay_at(std::size_t step) const;
  const EmaScheduleOptions& options() const { return options_; }

 private:
  explicit EmaSchedule(const EmaScheduleOptions& options) : options_(options) {}
  EmaScheduleOptions options_;
};

// mirror ← decay·mirror + (1 − decay)·current, element-wise.
// Errors (invalid): sizes differ; decay outside [0, 1]. On error the mirror is untouched.
Status ema_update(std::span<float> mirror, std::span<const float> current, double decay);

}  // namespace musacoder::rl
