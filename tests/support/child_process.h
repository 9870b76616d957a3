// A child process with its output in a log file, for tests that start the real binaries
// (servers, workers) and watch their logs; and a free loopback port.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace musacoder::testing {

// A free TCP port on 127.0.0.1 (bound, read, released; redis cannot take port 0).
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A child process; SIGKILLed (with its group) on destruction unless it already ended.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::filesystem::path& log) : log_(log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Child() { kill(SIGKILL); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // Sends `sig` and reaps the process (SIGKILL hits the whole group: runner children too).
  void kill(int sig) {
    if (pid_ <= 0 || reaped_) return;
    if (sig == SIGKILL)
      ::kill(-pid_, SIGKILL);
    else
      ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
  }
  bool alive() {
    if (reaped_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) reaped_ = true;
    return !reaped_;
  }
  std::string log() const {
    std::ifstream f(log_);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  // Waits for `pattern` in the log; returns its first capture group.
  std::optional<std::string> wait_for(const std::string& pattern, std::chrono::seconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    std::regex re(pattern);
    while (std::chrono::steady_clock::now() < end) {
      std::smatch m;
      std::string text = log();
      if (std::regex_search(text, m, re)) return m.size() > 1 ? m[1].str() : m[0].str();
      if (!alive()) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return std::nullopt;
  }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

}  // namespace musacoder::testing
