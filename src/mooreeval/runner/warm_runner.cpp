#include "mooreeval/runner/warm_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "mooreeval/runner/runner.h"

#ifndef MOOREEVAL_BUILT_WARM_CLIENT
#define MOOREEVAL_BUILT_WARM_CLIENT ""
#endif

namespace musacoder::run {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// An fd that closes itself.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// Moves `fd` above the standard streams and the control pipe (inherit_fds must be > 3).
int above_three(int fd) {
  if (fd < 0 || fd > 3) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  return moved;
}

sockaddr_un address_of(const fs::path& socket) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
  return addr;
}

enum class Ping { kPong, kNoAnswerYet, kGone };

// One ping: connect, ask, wait for "pong" until `until`. kGone when the zygote's socket
// refuses or drops the connection (it exited), kNoAnswerYet when time ran out.
Ping ping(const fs::path& socket, Clock::time_point until) {
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.fd < 0) return Ping::kGone;
  sockaddr_un addr = address_of(socket);
  if (::connect(fd.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return Ping::kGone;
  static constexpr char kRequest[] = "{\"ping\": true}";
  if (::send(fd.fd, kRequest, sizeof(kRequest) - 1, MSG_NOSIGNAL) !=
      static_cast<ssize_t>(sizeof(kRequest) - 1))
    return Ping::kGone;
  std::string reply;
  while (reply.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return Ping::kNoAnswerYet;
    pollfd p{fd.fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) return Ping::kGone;
    if (n <= 0) continue;
    char buf[64];
    const ssize_t got = ::recv(fd.fd, buf, sizeof(buf), 0);
    if (got <= 0) return Ping::kGone;
    reply.append(buf, static_cast<std::size_t>(got));
  }
  return reply.rfind("pong", 0) == 0 ? Ping::kPong : Ping::kGone;
}

}  // namespace

WarmRunner::WarmRunner(TempDir dir, std::unique_ptr<Subprocess> zygote, fs::path client)
    : dir_(std::move(dir)),
      socket_(dir_.path() / "zygote.sock"),
      client_(std::move(client)),
      zygote_(std::move(zygote)) {}

Result<fs::path> locate_warm_client() {
  std::string path = MOOREEVAL_BUILT_WARM_CLIENT;
  if (const char* env = std::getenv("MOOREEVAL_WARM_CLIENT"); env && *env) path = env;
  std::error_code ec;
  if (path.empty() || !fs::is_regular_file(path, ec) || ::access(path.c_str(), X_OK) != 0)
    return not_found("the warm runner's client program was not found at '" + path +
                     "' (build the mooreeval_warm_client target or set MOOREEVAL_WARM_CLIENT)");
  return fs::absolute(path, ec);
}

WarmRunner::~WarmRunner() = default;  // ~Subprocess kills the zygote's group

Result<std::unique_ptr<WarmRunner>> WarmRunner::start(const RunnerOptions& options,
                                                      const WarmRunnerSpec& spec) {
  auto client = locate_warm_client();
  if (!client.ok()) return client.status();
  auto dir = TempDir::create("mooreeval-warm-", spec.parent_dir);
  if (!dir.ok()) return dir.status();
  const fs::path socket = dir->path() / "zygote.sock";
  if (socket.string().size() >= sizeof(sockaddr_un::sun_path))
    return invalid_argument("warm runner socket path too long: " + socket.string());
  Fd listener(above_three(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)));
  if (listener.fd < 0) return internal_error(std::string("warm runner: socket: ") + std::strerror(errno));
  sockaddr_un addr = address_of(socket);
  if (::bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener.fd, 64) != 0)
    return internal_error("warm runner: cannot listen on " + socket.string() + ": " + std::strerror(errno));
  const fs::path log_path = dir->path() / "zygote.log";
  Fd log(above_three(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)));
  if (log.fd < 0)
    return internal_error("warm runner: cannot open " + log_path.string() + ": " + std::strerror(errno));

  if (spec.sandbox && !spec.resident_device.empty())
    return invalid_argument("warm runner: a resident reference server never runs in a sandbox");
  ProcessOptions p;
  const bool resident = !spec.resident_device.empty();
  p.argv = {options.python,     "-m",
            "mooreeval_runner", resident ? "resident" : "zygote",
            "--listen-fd",      std::to_string(listener.fd),
            "--log-fd",         std::to_string(log.fd)};
  if (resident) p.argv.insert(p.argv.end(), {"--device", spec.resident_device});
  if (spec.sandbox) p.argv.push_back("--exclusive");
  p.env_set = runner_environment(options);
  p.cwd = dir->path().string();
  p.inherit_fds = {listener.fd, log.fd};
  // Lives as long as this object; the startup wait below has its own deadline.
  p.deadline = std::chrono::hours(24 * 365);
  p.max_output_bytes = 64 << 10;
  if (spec.sandbox) {
    auto wrapped = spec.sandbox(std::move(p));
    if (!wrapped.ok()) return wrapped.status();
    p = std::move(wrapped).value();
  }
  // Started by a worker thread perhaps, but it must outlive it (and die with this process).
  auto zygote = Subprocess::spawn_long_lived(p);
  if (!zygote.ok()) return zygote.status();
  // From now on the zygote holds the only copy of the listening socket: when it dies,
  // connecting fails at once.
  ::close(listener.fd);
  listener.fd = -1;
  std::unique_ptr<WarmRunner> warm(
      new WarmRunner(std::move(dir).value(), std::move(zygote).value(), std::move(client).value()));
  const auto give_up = Clock::now() + spec.startup_deadline;
  switch (ping(warm->socket_, give_up)) {
    case Ping::kPong:
      return warm;
    case Ping::kGone: {
      const std::string said = warm->log_tail();
      warm->zygote_.reset();
      return failed_precondition("the warm runner refused to start or exited: " +
                                 (said.empty() ? std::string("(it printed nothing)") : said));
    }
    case Ping::kNoAnswerYet:
      break;
  }
  const std::string said = warm->log_tail();
  warm->zygote_.reset();  // kills it
  return internal_error("the warm runner did not come up within " +
                        std::to_string(spec.startup_deadline.count() / 1000) + " s" +
                        (said.empty() ? std::string() : ": " + said));
}

bool WarmRunner::healthy(std::chrono::milliseconds timeout) const {
  return ping(socket_, Clock::now() + timeout) == Ping::kPong;
}

std::string WarmRunner::log_tail() const {
  auto text = read_file(dir_.path() / "zygote.log", 1 << 20);
  if (!text.ok()) return "";
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
}

}  // namespace musacoder::run
