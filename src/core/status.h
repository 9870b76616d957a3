// Status and Result<T>: recoverable failures that a user or a candidate can cause.
// Broken invariants use MC_CHECK (check.h) instead.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace musacoder {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input from the user: flags, files, task definitions
  kNotFound,         // a named file, task or tool does not exist
  kFailedPrecondition,
  kDeadlineExceeded,
  kInternal,  // infrastructure failure: a runner died, a tool misbehaved
  kUnavailable,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status not_found(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status internal_error(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}
inline Status deadline_exceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status failed_precondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status unavailable(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}

// Holds either a T or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace musacoder

// Propagates a non-ok Status from an expression returning Status.
#define MC_RETURN_IF_ERROR(expr)         \
  do {                                   \
    ::musacoder::Status _mc_st = (expr); \
    if (!_mc_st.ok()) return _mc_st;     \
  } while (0)
