#include "mooreeval/service/job.h"

#include <chrono>
#include <random>

namespace musacoder::service {

const char* job_state_name(JobState s) {
  switch (s) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "?";
}

bool parse_job_state(const std::string& name, JobState& out) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kCancelled}) {
    if (name == job_state_name(s)) {
      out = s;
      return true;
    }
  }
  return false;
}

std::string new_job_id() {
  // std::random_device reads the OS entropy source on Linux/glibc; a thread_local engine
  // is not used on purpose: ids from forked or restarted processes must never repeat.
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  id.reserve(32);
  for (int i = 0; i < 4; ++i) {
    uint32_t word = rd();
    for (int j = 0; j < 8; ++j) {
      id.push_back(kHex[word & 0xf]);
      word >>= 4;
    }
  }
  return id;
}

bool is_job_id(const std::string& s) {
  if (s.size() != 32) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

double unix_now() {
  using namespace std::chrono;
  return duration_cast<duration<double>>(system_clock::now().time_since_epoch()).count();
}

}  // namespace musacoder::service
