#include "core/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/files.h"

namespace musacoder {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "mooreeval-run-";
constexpr const char* kLock = "owner.lock";

fs::path base_of(const fs::path& parent) {
  std::error_code ec;
  return parent.empty() ? fs::temp_directory_path(ec) : parent;
}

}  // namespace

Result<RunDir> RunDir::create(const fs::path& parent) {
  const fs::path base = base_of(parent);
  std::error_code ec;
  fs::create_directories(base, ec);
  std::string templ = (base / (kPrefix + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr)
    return internal_error("cannot create a run directory in " + base.string() + ": " + std::strerror(errno));
  const fs::path dir(templ);
  int fd = ::open((dir / kLock).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    (void)remove_tree(dir);
    return internal_error("cannot lock run directory " + dir.string() + ": " + why);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  (void)!::write(fd, pid.data(), pid.size());  // for people looking; the lock is what counts
  return RunDir(dir, fd);
}

RunDir::RunDir(RunDir&& other) noexcept
    : path_(std::move(other.path_)), lock_fd_(other.lock_fd_), keep_(other.keep_) {
  other.path_.clear();
  other.lock_fd_ = -1;
}

RunDir::~RunDir() {
  if (!path_.empty() && !keep_) (void)remove_tree(path_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

SweepOutcome sweep_dead_runs(const fs::path& parent) {
  SweepOutcome out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base_of(parent), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0 || !entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    // O_NOFOLLOW: a planted symlink named owner.lock is not followed.
    int fd = ::open((entry.path() / kLock).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno != ENOENT) continue;  // unreadable: not ours to judge
    if (fd < 0) {
      // No lock file yet: a run between mkdtemp and open, unless the dir is old.
      auto age = fs::file_time_type::clock::now() - fs::last_write_time(entry.path(), ec);
      if (ec || age < std::chrono::seconds(60)) continue;
    }
    const bool dead = fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (!dead) {
      ++out.live;
      ::close(fd);
      continue;
    }
    // Holding the dead run's lock while removing: a concurrent sweeper skips it.
    Status st = remove_tree(entry.path());
    if (fd >= 0) ::close(fd);
    if (st.ok()) {
      ++out.removed;
    } else if (out.first_error.empty()) {
      out.first_error = st.message();
    }
  }
  return out;
}

}  // namespace musacoder
