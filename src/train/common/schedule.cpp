#include "train/common/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace musacoder::train {

Result<LrSchedule> parse_lr_schedule(std::string_view name) {
  if (name == "cosine") return LrSchedule::kCosine;
  if (name == "linear") return LrSchedule::kLinear;
  if (name == "constant") return LrSchedule::kConstant;
  return invalid_argument("unknown lr scheduler '" + std::string(name) + "' (cosine, linear or constant)");
}

const char* lr_schedule_name(LrSchedule s) {
  switch (s) {
    case LrSchedule::kCosine:
      return "cosine";
    case LrSchedule::kLinear:
      return "linear";
    case LrSchedule::kConstant:
      return "constant";
  }
  return "?";
}

int64_t warmup_steps_for_ratio(double ratio, int64_t total_steps) {
  if (ratio <= 0) return 0;
  return static_cast<int64_t>(std::ceil(ratio * static_cast<double>(total_steps)));
}

double learning_rate(const ScheduleOptions& o, int64_t step) {
  if (step < o.warmup_steps) {
    return o.peak_lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  }
  const double p = static_cast<double>(step - o.warmup_steps) /
                   static_cast<double>(std::max<int64_t>(1, o.total_steps - o.warmup_steps));
  switch (o.kind) {
    case LrSchedule::kConstant:
      return o.peak_lr;
    case LrSchedule::kLinear:
      return o.peak_lr * std::max(0.0, 1.0 - p);
    case LrSchedule::kCosine: {
      const double min_lr = o.peak_lr * o.min_lr_ratio;
      return min_lr + (o.peak_lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * std::min(p, 1.0)));
    }
  }
  return o.peak_lr;
}

}  // namespace musacoder::train
