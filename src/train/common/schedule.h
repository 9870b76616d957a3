// Learning-rate schedules with linear warm-up (what the trainers call once per optimizer update).
//
//   step s = number of updates already applied (0 for the first update), W = warmup_steps, N = total_steps
//   warm-up  (s <  W):  lr = peak · (s + 1) / W            (the first update already moves; HF's lambda gives 0)
//   after    (s >= W):  p  = (s − W) / max(1, N − W)       (0 at the first post-warm-up update, → 1 at the end)
//     constant:  lr = peak
//     linear:    lr = peak · max(0, 1 − p)
//     cosine:    lr = min_lr + (peak − min_lr) · ½ · (1 + cos(π · min(p, 1)))   with min_lr = peak · min_lr_ratio
// Pure functions, no libtorch: the RL trainer and tests share them.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace musacoder::train {

enum class LrSchedule { kCosine, kLinear, kConstant };

// "cosine" | "linear" | "constant".
Result<LrSchedule> parse_lr_schedule(std::string_view name);
const char* lr_schedule_name(LrSchedule s);

struct ScheduleOptions {
  LrSchedule kind = LrSchedule::kCosine;
  double peak_lr = 5e-6;       // the lesson's SFT learning rate
  int64_t warmup_steps = 0;    // updates of linear warm-up
  int64_t total_steps = 1;     // updates in the whole run (all epochs)
  double min_lr_ratio = 0.0;   // cosine floor as a fraction of peak_lr
};

// The warm-up length for a ratio of the run, rounded up (transformers' get_warmup_steps).
int64_t warmup_steps_for_ratio(double ratio, int64_t total_steps);

// The learning rate of update `step` (0-based), per the formulas above.
double learning_rate(const ScheduleOptions& o, int64_t step);

}  // namespace musacoder::train
