// Per-caller rate limits: one token bucket per token name. A request takes one unit; an
// empty bucket refuses it and says when the next unit will be there (the Retry-After of
// the 429 reply).
//
// Thread-safety: every method may be called from any thread (one internal mutex).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

namespace musacoder::service {

struct RateLimitOptions {
  double per_second = 20;  // sustained requests/s per token name (0: no limit)
  double burst = 40;       // bucket size: requests allowed at once after idling
};

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RateLimiter(RateLimitOptions options) : options_(options) {}

  // 0 when the request may go now (a unit is taken); else the seconds until one is free.
  double take(const std::string& name, Clock::time_point now = Clock::now());

 private:
  struct Bucket {
    double units = 0;
    Clock::time_point at;
  };
  RateLimitOptions options_;
  std::mutex mu_;
  std::map<std::string, Bucket> buckets_;  // GUARDED_BY(mu_)
};

}  // namespace musacoder::service
