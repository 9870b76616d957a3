#pragma once
// Minimal Status / Result<T> private to mc_rl, so the RL library does not depend on src/core.
// Spelling follows the planned core/status.h (ok(), value(), status(), message()) so a later switch is a
// rename. Status is for what a caller can cause (bad shapes, NaN rewards, malformed checkpoints);
// broken internal invariants use MC_RL_CHECK, which is always on and aborts.
//
// Thread-safety: values; no shared state.

#include <cstdio>
#include <cstdlib>
#include <source_location>
#include <string>
#include <utility>
#include <variant>

namespace musacoder::rl {

namespace detail {
[[noreturn]] inline void check_failed(const char* expr, std::source_location where) {
  std::fprintf(stderr, "%s:%u: MC_RL_CHECK failed: %s\n", where.file_name(),
               static_cast<unsigned>(where.line()), expr);
  std::abort();
}
}  // namespace detail

#define MC_RL_CHECK(cond)        \
  ((cond) ? static_cast<void>(0) \
          : ::musacoder::rl::detail::check_failed(#cond, std::source_location::current()))

class [[nodiscard]] Status {
 public:
  enum class Code { kOk, kInvalid, kError };

  // A default-constructed Status is success.
  Status() = default;
  static Status success() { return Status(); }
  // The caller passed something that violates the documented contract (shape, range, NaN).
  static Status invalid(std::string message) { return Status(Code::kInvalid, std::move(message)); }
  // Any other recoverable failure (e.g. a checkpoint that cannot be parsed).
  static Status error(std::string message) { return Status(Code::kError, std::move(message)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  Code code_ = Code::kOk;
  std::string message_;
};

// Either a T or a non-ok Status. value() on an error is a broken invariant (aborts).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    MC_RL_CHECK(!std::get<Status>(state_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  const T& value() const& {
    MC_RL_CHECK(ok());
    return std::get<T>(state_);
  }
  T& value() & {
    MC_RL_CHECK(ok());
    return std::get<T>(state_);
  }
  T&& value() && {
    MC_RL_CHECK(ok());
    return std::get<T>(std::move(state_));
  }
  Status status() const { return ok() ? Status() : std::get<Status>(state_); }
  // Empty when ok().
  const std::string& message() const {
    static const std::string kEmpty;
    return ok() ? kEmpty : std::get<Status>(state_).message();
  }

 private:
  std::variant<T, Status> state_;
};

}  // namespace musacoder::rl
