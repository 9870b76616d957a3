#include "rl/mirror_schedule.h"

#include <algorithm>
#include <string>

namespace musacoder::rl {

Result<EmaSchedule> EmaSchedule::create(const EmaScheduleOptions& options) {
  if (options.update_every == 0) return invalid_argument("EmaSchedule: update_every must be >= 1");
  if (!(options.decay >= 0.0 && options.decay < 1.0)) {
    return invalid_argument("EmaSchedule: decay must lie in [0, 1)");
  }
  return EmaSchedule(options);
}

std::optional<double> EmaSchedule::decay_at(std::size_t step) const {
  if (step < options_.start_step) return std::nullopt;
  const std::size_t since = step - options_.start_step;
  if (since == 0) return 0.0;
  if (since % options_.update_every != 0) return std::nullopt;
  return options_.decay;
}

Status ema_update(std::span<float> mirror, std::span<const float> current, double decay) {
  if (mirror.size() != current.size()) {
    return invalid_argument("ema_update: mirror has " + std::to_string(mirror.size()) + " values, current " +
                           std::to_string(current.size()));
  }
  if (!(decay >= 0.0 && decay <= 1.0)) return invalid_argument("ema_update: decay must lie in [0, 1]");
  if (decay == 0.0) {
    // A plain copy, so an uninitialised (even NaN) mirror is fine for the first update.
    std::copy(current.begin(), current.end(), mirror.begin());
    return Status();
  }
  const float keep = static_cast<float>(decay);
  const float take = static_cast<float>(1.0 - decay);
  for (std::size_t i = 0; i < mirror.size(); ++i) mirror[i] = keep * mirror[i] + take * current[i];
  return Status();
}

}  // namespace musacoder::rl
