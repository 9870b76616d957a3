#include "sandbox/cgroup.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/files.h"

namespace musacoder::sandbox {

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = "/sys/fs/cgroup";

Status write_text(const fs::path& file, const std::string& text) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return internal_error("open " + file.string() + ": " + std::strerror(errno));
  ssize_t n = ::write(fd, text.data(), text.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    return internal_error("write '" + text + "' to " + file.string() + ": " + std::strerror(e));
  return {};
}

// "0::/user.slice/x.scope" -> /sys/fs/cgroup/user.slice/x.scope
Result<fs::path> own_cgroup() {
  auto text = read_file("/proc/self/cgroup", 1 << 16);
  if (!text.ok()) return text.status();
  std::size_t pos = text->find("0::");
  if (pos == std::string::npos) return not_found("no cgroup2 entry in /proc/self/cgroup");
  std::string rel = text->substr(pos + 3, text->find('\n', pos) - pos - 3);
  return kRoot / fs::path(rel).relative_path();
}

}  // namespace

CgroupSupport detect_cgroup(const fs::path& parent_option) {
  CgroupSupport s;
  struct statfs sf {};
  if (::statfs(kRoot.c_str(), &sf) != 0 || sf.f_type != CGROUP2_SUPER_MAGIC) {
    s.reason =
        "/sys/fs/cgroup is not cgroup v2 (cgroup v1 or none): memory and pids limits fall back to rlimits";
    return s;
  }
  fs::path parent = parent_option;
  if (parent.empty()) {
    auto own = own_cgroup();
    if (!own.ok()) {
      s.reason = own.status().message();
      return s;
    }
    parent = *own;
  }
  if (::access(parent.c_str(), W_OK) != 0) {
    s.reason = "cgroup " + parent.string() + " is not writable (" + std::strerror(errno) +
               "); pass --sandbox-cgroup with a delegated cgroup";
    return s;
  }
  auto controllers = read_file(parent / "cgroup.controllers", 4096);
  if (!controllers.ok() || controllers->find("memory") == std::string::npos ||
      controllers->find("pids") == std::string::npos) {
    s.reason = "cgroup " + parent.string() + " lacks the memory or pids controller";
    return s;
  }
  // Children get the controllers only when the parent delegates them; a parent that
  // holds processes itself cannot (the no-internal-processes rule: EBUSY).
  auto subtree = read_file(parent / "cgroup.subtree_control", 4096);
  if (!subtree.ok() || subtree->find("memory") == std::string::npos ||
      subtree->find("pids") == std::string::npos) {
    if (Status st = write_text(parent / "cgroup.subtree_control", "+memory +pids"); !st.ok()) {
      s.reason = "cannot delegate memory/pids below " + parent.string() + " (" + st.message() +
                 "); pass --sandbox-cgroup with an empty delegated cgroup";
      return s;
    }
  }
  auto probe = JobCgroup::create(parent, "mooreeval-probe-" + std::to_string(::getpid()), 64 << 20, 16);
  if (!probe.ok()) {
    s.reason = probe.status().message();
    return s;
  }
  s.available = true;
  s.parent = parent;
  return s;
}

Result<std::unique_ptr<JobCgroup>> JobCgroup::create(const fs::path& parent, const std::string& name,
                                                     std::size_t memory_bytes, int max_pids) {
  std::unique_ptr<JobCgroup> cg(new JobCgroup());
  cg->path_ = parent / name;
  if (::mkdir(cg->path_.c_str(), 0755) != 0)
    return internal_error("mkdir " + cg->path_.string() + ": " + std::strerror(errno));
  MC_RETURN_IF_ERROR(write_text(cg->path_ / "memory.max", std::to_string(memory_bytes)));
  MC_RETURN_IF_ERROR(write_text(cg->path_ / "pids.max", std::to_string(max_pids)));
  // Not every kernel has swap accounting; memory.max alone still bounds RAM.
  (void)write_text(cg->path_ / "memory.swap.max", "0");
  cg->procs_fd_ = ::open((cg->path_ / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (cg->procs_fd_ < 0) return internal_error("open cgroup.procs: " + std::string(std::strerror(errno)));
  return cg;
}

bool JobCgroup::oom_killed() const {
  auto events = read_file(path_ / "memory.events", 4096);
  if (!events.ok()) return false;
  auto pos = events->find("oom_kill ");
  return pos != std::string::npos && events->compare(pos + 9, 1, "0") != 0;
}

JobCgroup::~JobCgroup() {
  if (procs_fd_ >= 0) ::close(procs_fd_);
  if (path_.empty()) return;
  // cgroup.kill (Linux >= 5.14) SIGKILLs every member; rmdir succeeds once they are gone.
  (void)write_text(path_ / "cgroup.kill", "1");
  for (int i = 0; i < 200 && ::rmdir(path_.c_str()) != 0 && errno == EBUSY; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

}  // namespace musacoder::sandbox
