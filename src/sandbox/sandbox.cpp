#include "sandbox/sandbox.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "core/check.h"
#include "core/files.h"
#include "sandbox/bwrap_args.h"
#include "sandbox/seccomp_filter.h"

namespace musacoder::sandbox {

namespace fs = std::filesystem;
using nlohmann::json;

const char* sandbox_mode_name(SandboxMode m) {
  switch (m) {
    case SandboxMode::kOff:
      return "off";
    case SandboxMode::kOn:
      return "on";
    case SandboxMode::kAuto:
      return "auto";
  }
  return "auto";
}

Result<SandboxMode> parse_sandbox_mode(const std::string& name) {
  if (name == "off") return SandboxMode::kOff;
  if (name == "on") return SandboxMode::kOn;
  if (name == "auto") return SandboxMode::kAuto;
  return invalid_argument("unknown sandbox mode '" + name + "' (expected on, off or auto)");
}

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::kAuto:
      return "auto";
    case Strategy::kPrivileged:
      return "privileged";
    case Strategy::kUserNamespace:
      return "userns";
  }
  return "auto";
}

namespace {

constexpr std::size_t kMinCudaAddressSpace = std::size_t{16} << 30;

std::string first_line(const std::string& s) {
  return s.substr(0, std::min(s.find('\n'), std::size_t{300}));
}

// Everything the child does between fork and exec, as plain data: the closure that
// applies it must not allocate.
struct ChildLimits {
  std::array<std::pair<int, rlim_t>, 6> limits{};
  int n_limits = 0;
  int cgroup_procs_fd = -1;
  bool set_ids = false;  // drop to uid/gid before exec'ing bwrap (userns strategy as root)
  uid_t uid = 0;
  gid_t gid = 0;

  void add(int resource, rlim_t value) { limits[n_limits++] = {resource, value}; }

  // Async-signal-safe. Returns 0 or an errno value.
  int apply() const {
    if (cgroup_procs_fd >= 0 && ::write(cgroup_procs_fd, "0", 1) != 1) return errno;
    for (int i = 0; i < n_limits; ++i) {
      rlimit r{limits[i].second, limits[i].second};
      if (::setrlimit(limits[i].first, &r) != 0) return errno;
    }
    if (set_ids) {
      // Raw syscalls: this thread is the only one in the child.
      if (::syscall(SYS_setgroups, 0, nullptr) != 0) return errno;
      if (::syscall(SYS_setresgid, gid, gid, gid) != 0) return errno;
      if (::syscall(SYS_setresuid, uid, uid, uid) != 0) return errno;
      // A credential change clears the parent-death signal; set it again.
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return errno;
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    return 0;
  }
};

// What a sandboxed process holds until it is gone.
struct ProcessResources {
  int seccomp_fd = -1;
  std::unique_ptr<JobCgroup> cgroup;
  ~ProcessResources() {
    if (seccomp_fd >= 0) ::close(seccomp_fd);
  }
};

}  // namespace

JobSandbox::JobSandbox(JobSandbox&& o) noexcept : sandbox_(o.sandbox_), uid_(o.uid_), lock_fd_(o.lock_fd_) {
  o.sandbox_ = nullptr;
  o.lock_fd_ = -1;
}

JobSandbox& JobSandbox::operator=(JobSandbox&& o) noexcept {
  if (this != &o) {
    if (lock_fd_ >= 0) ::close(lock_fd_);
    sandbox_ = o.sandbox_;
    uid_ = o.uid_;
    lock_fd_ = o.lock_fd_;
    o.sandbox_ = nullptr;
    o.lock_fd_ = -1;
  }
  return *this;
}

JobSandbox::~JobSandbox() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock: the uid is free again
}

Result<ProcessOptions> JobSandbox::wrap(ProcessOptions process, const SandboxJob& job) const {
  if (!sandbox_) return process;
  return sandbox_->wrap(std::move(process), job, uid_);
}

ProcessWrapper JobSandbox::wrapper(SandboxJob job) const {
  if (!sandbox_) return {};
  return [this, job = std::move(job)](ProcessOptions p) { return wrap(std::move(p), job); };
}

Sandbox::~Sandbox() {
  if (seccomp_memfd_ >= 0) ::close(seccomp_memfd_);
}

Result<JobSandbox> Sandbox::for_job() const {
  JobSandbox j;
  if (!active_) return j;
  j.sandbox_ = this;
  if (!drop_uid_) {  // not root: every job shares the caller's uid
    j.uid_ = ::getuid();
    return j;
  }
  std::error_code ec;
  fs::create_directories(options_.uid_lock_dir, ec);
  const int n = options_.uid_count;
  const int start = next_slot_.fetch_add(1) % n;
  for (int i = 0; i < n; ++i) {
    const uid_t uid = options_.uid_base + static_cast<uid_t>((start + i) % n);
    const fs::path lock = options_.uid_lock_dir / (std::to_string(uid) + ".lock");
    int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
      return internal_error("sandbox: cannot open the uid lease " + lock.string() + ": " +
                            std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      j.uid_ = uid;
      j.lock_fd_ = fd;
      return j;
    }
    ::close(fd);
  }
  return unavailable("sandbox: all " + std::to_string(n) + " job uids from " +
                     std::to_string(options_.uid_base) + " are in use on this host");
}

json Sandbox::settings() const {
  json j = {{"mode", sandbox_mode_name(options_.mode)}, {"active", active_}};
  if (!reason_.empty()) j["reason"] = reason_;
  if (!active_) return j;
  j["strategy"] = strategy_name(strategy_);
  j["per_job_uid"] = drop_uid_;
  j["uid_base"] = drop_uid_ ? options_.uid_base : ::getuid();
  j["cgroup"] = cgroup_.available ? json(cgroup_.parent.string()) : json(nullptr);
  j["memory_bytes"] = options_.memory_bytes;
  j["memory_limit_via"] = cgroup_.available ? "cgroup memory.max" : "RLIMIT_AS (cpu jobs and builds)";
  j["max_processes"] = options_.max_processes;
  j["process_limit_via"] =
      cgroup_.available ? "cgroup pids.max" : (drop_uid_ ? "RLIMIT_NPROC of the job uid" : "none (not root)");
  j["cuda_address_space_bytes"] = options_.cuda_address_space_bytes;
  j["tmp_bytes"] = options_.tmp_bytes;
  j["max_file_bytes"] = options_.max_file_bytes;
  j["max_open_files"] = options_.max_open_files;
  j["network"] = false;
  j["seccomp_denied"] = denied_syscalls();
  return j;
}

Result<ProcessOptions> Sandbox::wrap(ProcessOptions process, const SandboxJob& job, uid_t uid) const {
  MC_CHECK(active_);
  if (process.argv.empty()) return invalid_argument("sandbox: empty argv");
  if (!job.work_dir.is_absolute()) return invalid_argument("sandbox: the work dir must be an absolute path");
  std::error_code ec;
  if (!fs::is_directory(job.work_dir, ec))
    return failed_precondition("sandbox: work dir " + job.work_dir.string() + " does not exist");
  if (drop_uid_) {
    // 0711: bwrap's --chdir runs as root without capabilities (privileged strategy), so it
    // needs the search bit; the dir is only mounted in this job's sandboxes anyway.
    if (::chown(job.work_dir.c_str(), uid, uid) != 0 || ::chmod(job.work_dir.c_str(), 0711) != 0)
      return internal_error("sandbox: cannot hand " + job.work_dir.string() + " to uid " +
                            std::to_string(uid) + ": " + std::strerror(errno));
  }

  BwrapPlan plan;
  plan.user_namespace = strategy_ == Strategy::kUserNamespace;
  plan.uid = uid;
  plan.gid = uid;
  plan.setpriv = setpriv_path_;
  plan.tmp_bytes = options_.tmp_bytes;
  plan.chdir = job.work_dir;
  plan.symlinks = host_.symlinks;
  plan.mounts = host_.mounts;
  for (const auto& p : python_paths_) plan.mounts.push_back({Mount::Kind::kReadOnly, p});
  for (const auto& p : options_.extra_read_only) plan.mounts.push_back({Mount::Kind::kReadOnly, p});
  for (const auto& p : job.read_only) {
    if (!p.is_absolute())
      return invalid_argument("sandbox: read-only path " + p.string() + " is not absolute");
    if (!fs::exists(p, ec))
      return failed_precondition("sandbox: read-only path " + p.string() + " does not exist");
    plan.mounts.push_back({Mount::Kind::kReadOnly, p});
  }
  plan.mounts.push_back({Mount::Kind::kReadWrite, job.work_dir});
  const bool gpu_job = job.kind == JobKind::kRunCuda || job.kind == JobKind::kRunMusa;
  if (gpu_job) {
    auto devices = job.kind == JobKind::kRunCuda ? cuda_device_nodes(job.gpu_index) : musa_device_nodes();
    if (!devices.ok()) return devices.status();
    for (const auto& d : *devices) plan.mounts.push_back({Mount::Kind::kDevice, d});
    plan.bind_sys = true;  // the driver reads PCI topology from sysfs
  }

  auto resources = std::make_shared<ProcessResources>();
  auto fd = reopen_for_reading(seccomp_memfd_, 10);
  if (!fd.ok()) return fd.status();
  resources->seccomp_fd = *fd;
  plan.seccomp_fd = *fd;

  ChildLimits limits;
  limits.add(RLIMIT_CORE, 0);
  limits.add(RLIMIT_FSIZE, options_.max_file_bytes);
  limits.add(RLIMIT_NOFILE, static_cast<rlim_t>(options_.max_open_files));
  if (cgroup_.available) {
    auto cg = JobCgroup::create(
        cgroup_.parent, "mooreeval-" + std::to_string(::getpid()) + "-" + std::to_string(++cgroup_counter_),
        options_.memory_bytes, options_.max_processes);
    if (!cg.ok()) return cg.status();
    resources->cgroup = std::move(cg).value();
    limits.cgroup_procs_fd = resources->cgroup->procs_fd();
  } else {
    if (drop_uid_) limits.add(RLIMIT_NPROC, static_cast<rlim_t>(options_.max_processes));
    if (!gpu_job && job.limit_address_space)
      limits.add(RLIMIT_AS, options_.memory_bytes);
  }
  if (gpu_job && options_.cuda_address_space_bytes > 0)
    limits.add(RLIMIT_AS, options_.cuda_address_space_bytes);
  limits.set_ids = drop_uid_ && strategy_ == Strategy::kUserNamespace;
  limits.uid = uid;
  limits.gid = uid;

  // The command: the configured interpreter name becomes the real executable.
  plan.command = process.argv;
  if (plan.command[0] == options_.python) plan.command[0] = python_executable_;

  // A clean environment: an allowlist from the host, then the job's own variables.
  std::map<std::string, std::string> env;
  for (const auto& name : options_.pass_env)
    if (const char* v = std::getenv(name.c_str()); v) env[name] = v;
  std::string path = fs::path(python_executable_).parent_path().string();
  if (const char* cuda = std::getenv("CUDA_HOME"); cuda && *cuda) path += ":" + std::string(cuda) + "/bin";
  env["PATH"] = path + ":/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
  env["HOME"] = "/tmp";
  env["TMPDIR"] = "/tmp";
  env["USER"] = env["LOGNAME"] = "sandbox";
  for (const auto& [k, v] : process.env_set) env[k] = v;
  for (const auto& k : process.env_unset) env.erase(k);

  ProcessOptions out = std::move(process);
  out.argv = bwrap_argv(bwrap_path_, plan);
  out.env_set = std::move(env);
  out.env_unset.clear();
  out.clear_env = true;
  out.cwd.clear();  // bwrap --chdir
  out.inherit_fds.push_back(*fd);
  auto previous_setup = out.child_setup;
  out.child_setup = [limits, previous_setup]() -> int {
    if (previous_setup)
      if (int e = previous_setup(); e != 0) return e;
    return limits.apply();
  };
  out.keep_alive = resources;
  return out;
}

Status Sandbox::probe(Strategy s) {
  strategy_ = s;
  auto dir = TempDir::create("mooreeval-sandbox-probe-");
  if (!dir.ok()) return dir.status();
  ProcessOptions p;
  p.argv = {options_.python, "-S", "-c", "import sys; sys.stdout.write('sandbox-ok')"};
  p.deadline = std::chrono::seconds(20);
  auto lease = for_job();
  if (!lease.ok()) return lease.status();
  auto wrapped = lease->wrap(p, {JobKind::kRunCpu, fs::absolute(dir->path()), {}, 0});
  if (!wrapped.ok()) return wrapped.status();
  auto r = run_process(*wrapped);
  if (!r.ok()) return r.status();
  if (!r->succeeded() || r->stdout_text != "sandbox-ok")
    return unavailable(std::string(strategy_name(s)) + " probe failed (" + r->describe() +
                       "): " + first_line(r->stderr_text));
  return {};
}

Result<std::unique_ptr<Sandbox>> Sandbox::create(const SandboxOptions& options) {
  std::unique_ptr<Sandbox> s(new Sandbox());
  s->options_ = options;
  if (options.mode == SandboxMode::kOff) {
    s->reason_ = "disabled (--sandbox off)";
    return s;
  }
  if (options.cuda_address_space_bytes > 0 && options.cuda_address_space_bytes < kMinCudaAddressSpace)
    return invalid_argument("sandbox: an address-space limit for CUDA jobs must be at least 16 GiB");
  if (options.uid_count < 1 || options.max_processes < 1)
    return invalid_argument("sandbox: bad uid_count/max_processes");
  auto degrade = [&](const std::string& why) -> Result<std::unique_ptr<Sandbox>> {
    if (options.mode == SandboxMode::kOn) return failed_precondition("sandbox unavailable: " + why);
    s->active_ = false;
    s->reason_ = "sandbox unavailable, jobs run unsandboxed: " + why;
    return std::move(s);
  };
  s->bwrap_path_ = find_program(options.bwrap);
  if (s->bwrap_path_.empty())
    return degrade("bubblewrap ('" + options.bwrap + "') not found in PATH (apt install bubblewrap)");
  auto python = discover_python(options.python);
  if (!python.ok()) return degrade(python.status().message());
  s->python_executable_ = python->executable;
  s->python_paths_ = python->paths;
  s->host_ = system_layout();
  auto memfd = seccomp_program_memfd();
  if (!memfd.ok()) return degrade(memfd.status().message());
  s->seccomp_memfd_ = *memfd;
  s->drop_uid_ = ::geteuid() == 0;
  s->cgroup_ =
      options.use_cgroup ? detect_cgroup(options.cgroup_parent) : CgroupSupport{false, {}, "disabled"};

  std::vector<Strategy> candidates;
  if (options.strategy != Strategy::kAuto) {
    candidates = {options.strategy};
  } else if (s->drop_uid_) {
    candidates = {Strategy::kPrivileged, Strategy::kUserNamespace};
  } else {
    candidates = {Strategy::kUserNamespace};
  }
  s->setpriv_path_ = find_program(options.setpriv);
  std::string failures;
  s->active_ = true;  // wrap() requires it during the probes
  for (Strategy c : candidates) {
    if (c == Strategy::kPrivileged && (!s->drop_uid_ || s->setpriv_path_.empty())) {
      failures +=
          std::string(failures.empty() ? "" : "; ") + "privileged: needs root and setpriv (util-linux)";
      continue;
    }
    Status st = s->probe(c);
    if (!st.ok() && s->cgroup_.available) {
      // The cgroup could be created but a process cannot join it (e.g. a parent that is
      // not really delegated): rlimits instead, rather than no sandbox.
      s->cgroup_ = CgroupSupport{false,
                                 {},
                                 "cgroup v2 below " + s->cgroup_.parent.string() + " unusable (" +
                                     st.message() + "): rlimits instead"};
      st = s->probe(c);
    }
    if (st.ok()) {
      s->strategy_ = c;
      std::vector<std::string> notes;
      if (!s->cgroup_.available) notes.push_back(s->cgroup_.reason);
      if (!s->drop_uid_)
        notes.push_back("not root: every job runs as uid " + std::to_string(::getuid()) +
                        " (no per-job uid, no RLIMIT_NPROC)");
      for (const auto& n : notes) s->reason_ += (s->reason_.empty() ? "" : "; ") + n;
      return s;
    }
    failures += std::string(failures.empty() ? "" : "; ") + st.message();
  }
  return degrade(failures);
}

}  // namespace musacoder::sandbox
