// A job of the MooreEval service: one (task, candidate) pair to evaluate, its life cycle
// and the messages that carry it between the API, the queue and the workers.
//
// States: queued -> running -> done, or queued|running -> cancelled. A job reaches `done`
// exactly once, when its result row is committed (see store.h); a reclaimed job goes back
// to `running` with a higher attempt number.
#pragma once

#include <cstdint>
#include <string>

namespace musacoder::service {

enum class JobState { kQueued, kRunning, kDone, kCancelled };

const char* job_state_name(JobState s);
// Inverse of job_state_name; false for an unknown name.
bool parse_job_state(const std::string& name, JobState& out);

// What a worker needs to evaluate a job. `candidate` holds raw bytes (not necessarily
// UTF-8: the evaluator itself classifies non-UTF-8 submissions as format errors).
struct JobMessage {
  std::string job_id;     // 32 lowercase hex digits
  std::string task_id;    // an id of the suite, e.g. "elementwise/add"
  std::string candidate;  // the submission, ≤ ServiceLimits::max_candidate_bytes
  std::string label;      // caller's free-form tag, echoed back (≤ 256 bytes)
};

// One delivery of a job to a worker. `deliveries` counts how often the queue handed this
// job out (1 on the first delivery; > 1 after reclaims from dead workers). `receipt` is
// the queue's handle for acknowledging it (the Redis stream entry id; empty in memory).
struct Delivery {
  JobMessage job;
  int deliveries = 1;
  std::string receipt;
};

// A fresh random job id (128 bits from the OS entropy source, as 32 hex digits).
std::string new_job_id();
// True for strings shaped like new_job_id()'s output.
bool is_job_id(const std::string& s);

// Seconds since the Unix epoch, with sub-second precision (timestamps in the store).
double unix_now();

}  // namespace musacoder::service
