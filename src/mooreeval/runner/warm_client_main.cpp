// mooreeval_warm_client: the process the orchestrator starts for a warm job (warm_runner.h).
// It hands its stdin, stdout, stderr and control pipe (fd 3) to a warm runner (zygote.py or
// resident.py) over the runner's Unix socket, then mirrors the job's end — the same exit
// code, or death by the same signal — so that to Subprocess and RunnerSession it *is* the
// job. Killing it (the job's deadline) closes the connection, and the runner then kills the
// job's process group.
//
//     mooreeval_warm_client SOCKET <runner argv...>
//
// The request is one JSON message {"argv": [...], "cwd": ..., "env": {...}} with the four
// descriptors attached (SCM_RIGHTS); "env" is $MOOREEVAL_WARM_ENV, a JSON object of the
// job's own environment additions. The runner answers line by line: "pid N" once forked,
// then "exit N", "signal N" or "error WHY".
//
// Exit code 86 with a message on stderr: the runner could not be reached or refused the job
// (nothing of the job ran), or it went away during the job.
//
// A native program rather than a Python one: it runs once per job (inspection, reference,
// candidate), and an interpreter's start-up (~0.1 s) was most of an inspection's seconds.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace {

constexpr int kUnreachable = 86;

[[noreturn]] void fail(const std::string& message) {
  const std::string line = "mooreeval warm runner " + message + "\n";
  (void)!write(2, line.data(), line.size());
  _exit(kUnreachable);
}

// The request message, or a failure (bad usage or environment) that ends the client.
std::string request_json(int argc, char** argv) {
  nlohmann::json env = nlohmann::json::object();
  if (const char* e = std::getenv("MOOREEVAL_WARM_ENV"); e && *e) {
    env = nlohmann::json::parse(e, nullptr, false);
    if (env.is_discarded() || !env.is_object()) fail("client: MOOREEVAL_WARM_ENV is not a JSON object");
  }
  std::error_code ec;
  const std::string cwd = std::filesystem::current_path(ec).string();
  if (ec) fail("client: cannot read the working directory: " + ec.message());
  nlohmann::json args = nlohmann::json::array();
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  // The runner decodes UTF-8; replace anything else rather than refusing to hand the job over.
  return nlohmann::json{{"argv", args}, {"cwd", cwd}, {"env", env}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Sends the request with fds 0-3 attached.
void send_request(int sock, const std::string& message) {
  int fds[4] = {0, 1, 2, 3};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  iovec iov{const_cast<char*>(message.data()), message.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t n;
  do {
    n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  // The runner reads the whole request with one recvmsg: a short send would be a broken request.
  if (n != static_cast<ssize_t>(message.size())) fail(std::string("unreachable: ") + std::strerror(errno));
}

// Acts on one line of the runner's answer; returns normally for lines that do not end the job.
void handle(const std::string& line) {
  const auto space = line.find(' ');
  const std::string word = line.substr(0, space);
  const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
  if (word == "exit") _exit(std::atoi(value.c_str()));
  if (word == "signal") {
    const int sig = std::atoi(value.c_str());
    std::signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    kill(getpid(), sig);
    _exit(128 + sig);
  }
  if (word == "error") fail("refused the job: " + value);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: mooreeval_warm_client SOCKET RUNNER-ARG...\n");
    return 2;
  }
  const std::string socket_path = argv[1];
  const std::string message = request_json(argc, argv);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) fail("unreachable: socket path too long: " + socket_path);
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) fail(std::string("unreachable: socket: ") + std::strerror(errno));
  if (connect(sock, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    fail("unreachable at " + socket_path + ": " + std::strerror(errno));
  send_request(sock, message);
  // Our own copies must not keep the job's pipes open after the job closes them (stderr
  // stays: our own messages go there).
  for (int fd : {0, 1, 3}) close(fd);
  std::string pending;
  char buf[256];
  for (;;) {
    const ssize_t n = read(sock, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      handle(pending.substr(0, nl));
      pending.erase(0, nl + 1);
    }
  }
  fail("went away during the job");
}
