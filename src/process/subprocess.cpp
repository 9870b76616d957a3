#include "process/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <set>
#include <thread>

extern char** environ;

namespace musacoder {
namespace {

using Clock = std::chrono::steady_clock;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::vector<std::string> build_environment(const ProcessOptions& o) {
  std::set<std::string> drop(o.env_unset.begin(), o.env_unset.end());
  for (const auto& [k, v] : o.env_set) drop.insert(k);
  std::vector<std::string> env;
  for (char** e = o.clear_env ? nullptr : environ; e && *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string::npos || drop.count(entry.substr(0, eq))) continue;
    env.push_back(std::move(entry));
  }
  for (const auto& [k, v] : o.env_set) env.push_back(k + "=" + v);
  return env;
}

std::vector<char*> as_c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Appends what is readable on fd; false at EOF or error.
bool drain_once(int fd, std::string& sink, std::size_t cap, bool& truncated) {
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  std::size_t room = sink.size() < cap ? cap - sink.size() : 0;
  if (static_cast<std::size_t>(n) > room) truncated = true;
  sink.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(n)));
  return true;
}

}  // namespace

struct Subprocess::State {
  ProcessOptions options;
  pid_t pid = -1;
  int in_fd = -1, out_fd = -1, err_fd = -1, ctl_fd = -1;
  Clock::time_point start, deadline;
  bool exited = false;
  int wait_status = 0;
  std::string control_buffer;
  std::size_t stdin_written = 0;
  std::string stdin_pending;
  ProcessResult result;

  ~State() {
    if (pid > 0 && !exited) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    close_fd(in_fd);
    close_fd(out_fd);
    close_fd(err_fd);
    close_fd(ctl_fd);
  }

  void reap_if_exited() {
    if (exited) return;
    if (::waitpid(pid, &wait_status, WNOHANG) == pid) {
      exited = true;
      ::kill(-pid, SIGKILL);  // stragglers in the group would keep our pipes open
    }
  }

  void kill_at_deadline() {
    if (!exited && Clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &wait_status, 0);
      exited = true;
      result.timed_out = true;
    }
  }

  // One poll round over all open fds. Returns poll's rc.
  int pump(int timeout_ms) {
    pollfd fds[4];
    int n = 0, oi = -1, ei = -1, ii = -1, ci = -1;
    if (out_fd >= 0) {
      fds[n] = {out_fd, POLLIN, 0};
      oi = n++;
    }
    if (err_fd >= 0) {
      fds[n] = {err_fd, POLLIN, 0};
      ei = n++;
    }
    if (ctl_fd >= 0) {
      fds[n] = {ctl_fd, POLLIN, 0};
      ci = n++;
    }
    if (in_fd >= 0 && stdin_written < stdin_pending.size()) {
      fds[n] = {in_fd, POLLOUT, 0};
      ii = n++;
    }
    int rc = ::poll(fds, n, timeout_ms);
    if (rc <= 0) return rc;
    bool trunc = result.output_truncated;
    if (oi >= 0 && fds[oi].revents &&
        !drain_once(out_fd, result.stdout_text, options.max_output_bytes, trunc))
      close_fd(out_fd);
    if (ei >= 0 && fds[ei].revents &&
        !drain_once(err_fd, result.stderr_text, options.max_output_bytes, trunc))
      close_fd(err_fd);
    bool ctl_trunc = false;
    if (ci >= 0 && fds[ci].revents && !drain_once(ctl_fd, control_buffer, 1 << 16, ctl_trunc))
      close_fd(ctl_fd);
    result.output_truncated = trunc;
    if (ii >= 0 && fds[ii].revents) {
      ssize_t w = ::write(in_fd, stdin_pending.data() + stdin_written, stdin_pending.size() - stdin_written);
      if (w > 0) stdin_written += static_cast<std::size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) close_fd(in_fd);
    }
    if (in_fd >= 0 && stdin_written >= stdin_pending.size() && close_stdin_when_flushed) close_fd(in_fd);
    return rc;
  }

  bool close_stdin_when_flushed = true;
};

std::string ProcessResult::describe() const {
  if (timed_out) return "timed out after " + std::to_string(wall_seconds) + " s";
  if (signaled) {
    const char* name = sigabbrev_np(term_signal);
    return "killed by signal " + std::to_string(term_signal) +
           (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "exit " + std::to_string(exit_code);
}

Subprocess::Subprocess(std::unique_ptr<State> state) : state_(std::move(state)) {}
Subprocess::~Subprocess() = default;

Result<std::unique_ptr<Subprocess>> Subprocess::spawn(const ProcessOptions& options) {
  if (options.argv.empty()) return invalid_argument("spawn: empty argv");
  for (int fd : options.inherit_fds)
    if (fd <= 3) return invalid_argument("spawn: inherited fd " + std::to_string(fd) + " collides with 0-3");
  // A child that closes stdin early must not kill us with SIGPIPE.
  static const bool sigpipe_ignored = [] { return ::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)sigpipe_ignored;

  std::vector<std::string> argv_store = options.argv;
  std::vector<std::string> env_store = build_environment(options);
  std::vector<char*> argv = as_c_strings(argv_store);
  std::vector<char*> envp = as_c_strings(env_store);

  int in[2], out[2], err[2], ctl[2], exec_err[2];
  int* pipes[] = {in, out, err, ctl, exec_err};
  for (int i = 0; i < 5; ++i) {
    if (::pipe2(pipes[i], O_CLOEXEC) != 0) {
      for (int j = 0; j < i; ++j) {
        ::close(pipes[j][0]);
        ::close(pipes[j][1]);
      }
      return internal_error(std::string("pipe: ") + std::strerror(errno));
    }
  }
  auto state = std::make_unique<State>();
  state->options = options;
  state->start = Clock::now();
  state->deadline = state->start + options.deadline;
  pid_t pid = ::fork();
  if (pid < 0) return internal_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls from here to exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::dup2(ctl[1], 3);
    for (int fd : options.inherit_fds) ::fcntl(fd, F_SETFD, 0);
    if (options.child_setup) {
      if (int e = options.child_setup(); e != 0) {
        (void)!::write(exec_err[1], &e, sizeof e);
        ::_exit(127);
      }
    }
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) {
      int e = errno;
      (void)!::write(exec_err[1], &e, sizeof e);
      ::_exit(127);
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    int e = errno;
    (void)!::write(exec_err[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from this side, so an early kill(-pid) finds the group
  state->pid = pid;
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  ::close(ctl[1]);
  ::close(exec_err[1]);
  state->in_fd = in[1];
  state->out_fd = out[0];
  state->err_fd = err[0];
  state->ctl_fd = ctl[0];
  int child_errno = 0;
  ssize_t got = ::read(exec_err[0], &child_errno, sizeof child_errno);
  ::close(exec_err[0]);
  if (got == sizeof child_errno) {
    ::waitpid(pid, nullptr, 0);
    state->exited = true;
    return not_found("cannot start '" + options.argv[0] + "': " + std::strerror(child_errno));
  }
  ::fcntl(state->in_fd, F_SETFL, O_NONBLOCK);
  state->stdin_pending = options.stdin_data;
  state->close_stdin_when_flushed = !options.keep_stdin_open;
  if (state->stdin_pending.empty() && !options.keep_stdin_open) close_fd(state->in_fd);
  return std::unique_ptr<Subprocess>(new Subprocess(std::move(state)));
}

std::optional<std::string> Subprocess::read_control_line() {
  State& s = *state_;
  while (true) {
    auto nl = s.control_buffer.find('\n');
    if (nl != std::string::npos) {
      std::string line = s.control_buffer.substr(0, nl);
      s.control_buffer.erase(0, nl + 1);
      return line;
    }
    if (s.ctl_fd < 0) return std::nullopt;
    s.reap_if_exited();
    s.kill_at_deadline();
    if (s.exited) {
      s.pump(0);  // a last line written just before exit
      if (s.control_buffer.find('\n') == std::string::npos) return std::nullopt;
      continue;
    }
    s.pump(20);
  }
}

void Subprocess::send_stdin(const std::string& data, bool close_after) {
  State& s = *state_;
  if (s.in_fd < 0) return;
  s.stdin_pending.append(data);
  s.close_stdin_when_flushed = close_after;
  if (close_after && s.stdin_written >= s.stdin_pending.size()) close_fd(s.in_fd);
}

void Subprocess::set_deadline(std::chrono::milliseconds from_now) {
  state_->deadline = Clock::now() + from_now;
}

ProcessResult Subprocess::wait() {
  State& s = *state_;
  while (true) {
    s.reap_if_exited();
    s.kill_at_deadline();
    if (s.exited && s.out_fd < 0 && s.err_fd < 0) break;
    // Once both output pipes are closed only the exit is left to see: look often, or every
    // short process would pay up to 20 ms for the reap.
    const bool pipes_closed = s.out_fd < 0 && s.err_fd < 0;
    int rc = s.pump(s.exited ? 50 : pipes_closed ? 2 : 20);
    if (rc < 0 && errno != EINTR) break;
    if (s.exited && rc == 0) break;  // a pipe held by a process that escaped the group
  }
  ProcessResult r = std::move(s.result);
  r.wall_seconds = std::chrono::duration<double>(Clock::now() - s.start).count();
  if (!r.timed_out) {
    if (WIFSIGNALED(s.wait_status)) {
      r.signaled = true;
      r.term_signal = WTERMSIG(s.wait_status);
    } else if (WIFEXITED(s.wait_status)) {
      r.exit_code = WEXITSTATUS(s.wait_status);
    }
  }
  s.result = {};
  return r;
}

Result<ProcessResult> run_process(const ProcessOptions& options) {
  auto child = Subprocess::spawn(options);
  if (!child.ok()) return child.status();
  return child.value()->wait();
}

}  // namespace musacoder

namespace musacoder {

Result<std::unique_ptr<Subprocess>> Subprocess::spawn_long_lived(const ProcessOptions& options) {
  // Never destroyed: the thread runs until the process exits (static destructors must not
  // pull the queue from under it).
  struct Spawner {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::packaged_task<Result<std::unique_ptr<Subprocess>>()>> queue;
  };
  static Spawner* spawner = [] {
    auto* s = new Spawner();
    std::thread([s] {
      while (true) {
        std::unique_lock<std::mutex> lock(s->mu);
        s->cv.wait(lock, [s] { return !s->queue.empty(); });
        auto task = std::move(s->queue.front());
        s->queue.pop_front();
        lock.unlock();
        task();
      }
    }).detach();
    return s;
  }();
  std::packaged_task<Result<std::unique_ptr<Subprocess>>()> task([&options] { return spawn(options); });
  auto result = task.get_future();
  {
    std::lock_guard<std::mutex> lock(spawner->mu);
    spawner->queue.push_back(std::move(task));
  }
  spawner->cv.notify_one();
  return result.get();
}

}  // namespace musacoder
