// Validation of the service's HTTP request bodies (docs/openapi.yaml). Every rejection
// is an ApiError with an HTTP status, a stable machine-readable code and a message that
// names the offending field; nothing here throws.
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace musacoder::service {

struct ServiceLimits {
  std::size_t max_body_bytes = std::size_t{64} << 20;      // HTTP request body (413 above)
  std::size_t max_candidate_bytes = std::size_t{1} << 20;  // one candidate, after base64 decoding
  std::size_t max_batch_jobs = 512;                        // jobs in one POST /v1/batches or lookup
  std::size_t max_label_bytes = 256;                       // the caller's label of a job
  std::size_t max_task_id_bytes = 256;                     // longer task ids cannot exist
  std::size_t max_json_depth = 32;                         // nesting of arrays/objects in a body
  double default_deadline_seconds = 300;                   // POST /v1/evaluate without deadline_seconds
  double max_deadline_seconds = 3600;                      // larger deadlines are rejected
};

struct ApiError {
  int http_status = 400;
  std::string code;  // invalid_json | invalid_request | too_large | unknown_task | not_found | ...
  std::string message;
  nlohmann::json to_json() const { return {{"error", {{"code", code}, {"message", message}}}}; }
};

// Either a value or the error that rejected the request.
template <typename T>
struct Parsed {
  std::optional<T> value;
  ApiError error;
  bool ok() const { return value.has_value(); }
  static Parsed fail(int status, std::string code, std::string message) {
    return {std::nullopt, {status, std::move(code), std::move(message)}};
  }
};

struct JobRequest {
  std::string task_id;
  std::string candidate;  // raw bytes
  std::string label;
};

struct EvaluateRequest {
  JobRequest job;
  double deadline_seconds = 0;
  bool cancel_on_deadline = false;  // cancel the job when the deadline passes
};

using TaskLookup = std::function<bool(const std::string& task_id)>;

// Parses a body that must be one JSON object, within the size and nesting limits.
Parsed<nlohmann::json> parse_body(std::string_view body, const ServiceLimits& limits);

// {"task": str, "candidate": str | "candidate_b64": str, "label"?: str}. Exactly one of
// candidate / candidate_b64 (base64 carries bytes that are not UTF-8, which JSON strings
// cannot). `where` prefixes messages, e.g. "jobs[3]: ".
Parsed<JobRequest> parse_job(const nlohmann::json& j, const ServiceLimits& limits, const TaskLookup& known,
                             const std::string& where = "");
// {"jobs": [job, ...]}: 1..max_batch_jobs jobs, all valid, or the first error.
Parsed<std::vector<JobRequest>> parse_batch(const nlohmann::json& j, const ServiceLimits& limits,
                                            const TaskLookup& known);
// A job plus "deadline_seconds"?: number in (0, max], "cancel_on_deadline"?: bool.
Parsed<EvaluateRequest> parse_evaluate(const nlohmann::json& j, const ServiceLimits& limits,
                                       const TaskLookup& known);
// {"job_ids": [id, ...]}: 1..max_batch_jobs well-formed ids.
Parsed<std::vector<std::string>> parse_lookup(const nlohmann::json& j, const ServiceLimits& limits);

// Strict RFC 4648 base64 (padding required, no whitespace); nullopt when malformed.
std::optional<std::string> decode_base64(std::string_view text);
std::string encode_base64(std::string_view bytes);

}  // namespace musacoder::service
