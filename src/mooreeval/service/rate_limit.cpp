#include "mooreeval/service/rate_limit.h"

#include <algorithm>

namespace musacoder::service {

double RateLimiter::take(const std::string& name, Clock::time_point now) {
  if (options_.per_second <= 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = buckets_.try_emplace(name, Bucket{options_.burst, now});
  Bucket& b = it->second;
  if (!fresh) {
    const double elapsed = std::chrono::duration<double>(now - b.at).count();
    b.units = std::min(options_.burst, b.units + std::max(0.0, elapsed) * options_.per_second);
    b.at = now;
  }
  if (b.units >= 1) {
    b.units -= 1;
    return 0;
  }
  return (1 - b.units) / options_.per_second;
}

}  // namespace musacoder::service
