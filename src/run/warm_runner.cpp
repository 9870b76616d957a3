#include "run/warm_runner.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "run/runner.h"

namespace musacoder::run {

namespace fs = std::filesystem;

WarmRunner::WarmRunner(TempDir dir, std::unique_ptr<Subprocess> zygote)
    : dir_(std::move(dir)), socket_(dir_.path() / "zygote.sock"), zygote_(std::move(zygote)) {}

WarmRunner::~WarmRunner() = default;  // ~Subprocess kills the zygote's group

Result<std::unique_ptr<WarmRunner>> WarmRunner::start(const RunnerOptions& options,
                                                      const fs::path& parent_dir,
                                                      std::chrono::milliseconds startup_deadline) {
  auto dir = TempDir::create("mooreeval-warm-", parent_dir);
  if (!dir.ok()) return dir.status();
  const fs::path socket = dir->path() / "zygote.sock";
  if (socket.string().size() >= sizeof(sockaddr_un::sun_path))
    return invalid_argument("warm runner socket path too long: " + socket.string());
  ProcessOptions p;
  p.argv = {options.python, "-m", "mooreeval_runner", "zygote", socket.string()};
  p.env_set = runner_environment(options);
  p.cwd = dir->path().string();
  // Lives as long as this object; the startup wait below has its own deadline.
  p.deadline = std::chrono::hours(24 * 365);
  p.max_output_bytes = 64 << 10;
  auto zygote = Subprocess::spawn(p);
  if (!zygote.ok()) return zygote.status();
  std::unique_ptr<WarmRunner> warm(new WarmRunner(std::move(dir).value(), std::move(zygote).value()));
  // The zygote binds its socket once torch is imported: poll for that, bounded.
  const auto give_up = std::chrono::steady_clock::now() + startup_deadline;
  while (!warm->healthy()) {
    if (auto refusal = read_file(warm->dir_.path() / "zygote.sock.status", 4096); refusal.ok()) {
      warm->zygote_.reset();
      return failed_precondition("the warm runner refused to start: " + *refusal);
    }
    if (std::chrono::steady_clock::now() >= give_up) {
      // ~WarmRunner kills it; whatever it printed says why.
      warm->zygote_.reset();
      return internal_error("the warm runner did not come up within " +
                            std::to_string(startup_deadline.count() / 1000) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return warm;
}

bool WarmRunner::healthy() const {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof(addr.sun_path) - 1);
  // A connection the zygote sees as a request that sends nothing: it reads EOF and drops it.
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace musacoder::run
