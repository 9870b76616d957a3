// Running a child process with a wall-clock deadline and captured, size-capped output.
//
// The child is placed in its own process group; on deadline (or when a Subprocess is
// destroyed while running) the whole group is killed with SIGKILL, so helpers the child
// started die with it. Children that leave the group (setsid) are the sandbox's concern
// (src/sandbox: a pid namespace whose init dies with the child), not this layer's.
//
// Besides stdin/stdout/stderr the child gets a control pipe on fd 3 (write end): a runner
// announces "ready" lines there without mixing them into output that candidate code can
// also print to.
//
// Thread-safety: distinct Subprocess objects may be used from different threads.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder {

struct ProcessOptions {
  std::vector<std::string> argv;               // argv[0] is looked up in PATH
  std::map<std::string, std::string> env_set;  // added to / overriding the inherited environment
  std::vector<std::string> env_unset;          // removed from the inherited environment
  std::string cwd;                             // empty: inherit
  std::string stdin_data;                      // written to the child's stdin at start
  bool keep_stdin_open = false;                // true: send_stdin() may write more later
  std::chrono::milliseconds deadline{30000};   // wall clock from spawn to kill
  std::size_t max_output_bytes = 1 << 20;      // per stream; the rest is drained and dropped
  bool clear_env = false;                      // true: the child gets env_set only, nothing inherited
  // Open fds the child keeps at the same number (close-on-exec cleared in the child only).
  // Each must be > 3 (0-3 are the standard streams and the control pipe).
  std::vector<int> inherit_fds;
  // Runs in the child between fork and exec, after the fds are in place and before chdir.
  // Async-signal-safe calls only (no allocation, no locks). Returns 0, or an errno value
  // that makes spawn() fail with that error.
  std::function<int()> child_setup;
  // Held until the Subprocess is destroyed: resources the child uses (a sandbox's seccomp
  // program fd, its cgroup). Shared so that ProcessOptions stays copyable.
  std::shared_ptr<const void> keep_alive;
};

// Turns a job's ProcessOptions into the ones to spawn (e.g. a sandboxed command line).
// Empty: spawn as given.
using ProcessWrapper = std::function<Result<ProcessOptions>(ProcessOptions)>;

struct ProcessResult {
  int exit_code = -1;       // valid when !signaled && !timed_out
  bool signaled = false;    // terminated by a signal (not our deadline kill)
  int term_signal = 0;      // the signal when signaled
  bool timed_out = false;   // killed by us at the deadline
  std::string stdout_text;  // possibly truncated to max_output_bytes
  std::string stderr_text;
  bool output_truncated = false;
  double wall_seconds = 0.0;

  bool succeeded() const { return !timed_out && !signaled && exit_code == 0; }
  // "exit 1", "killed by signal 11 (SIGSEGV)", "timed out after 2.0 s".
  std::string describe() const;
};

class Subprocess {
 public:
  // Starts the child. Non-ok only when it cannot be started (e.g. no such program).
  // The child gets SIGKILL when the *thread* that spawned it ends (PR_SET_PDEATHSIG is
  // per thread), which suits a job run by that thread.
  static Result<std::unique_ptr<Subprocess>> spawn(const ProcessOptions& options);
  // spawn() from a helper thread that lives as long as the process: for children that
  // outlive the calling thread (warm runners started by a worker), which then die with
  // the process rather than with that thread.
  static Result<std::unique_ptr<Subprocess>> spawn_long_lived(const ProcessOptions& options);
  ~Subprocess();  // kills the group if still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Waits for the next newline-terminated line on the control pipe (fd 3), while draining
  // output. nullopt when the child exited, closed fd 3 or the deadline passed first.
  std::optional<std::string> read_control_line();

  // Writes to the child's stdin (requires keep_stdin_open); closes it when `close_after`.
  void send_stdin(const std::string& data, bool close_after);

  // Waits for exit (or kills the group at the deadline) and returns what happened.
  ProcessResult wait();

  // Moves the deadline to `from_now` after this call (e.g. a runner started ahead of its
  // run slot gets its run deadline when the slot is taken). No effect once it exited.
  void set_deadline(std::chrono::milliseconds from_now);

 private:
  struct State;
  explicit Subprocess(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Spawn + wait. A non-ok Status only for failures to start.
Result<ProcessResult> run_process(const ProcessOptions& options);

}  // namespace musacoder
