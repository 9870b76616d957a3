// One sandbox per job (DESIGN.md §2, Isolation): every compiler and runner process of an
// evaluation runs under bubblewrap with
//   - private pid/net/ipc/uts/mount (and cgroup) namespaces; no network at all;
//   - read-only system dirs (/usr, /lib*, a few files of /etc), the Python installation,
//     and exactly the job's input files; the job's work dir read-write; a size-limited
//     private /tmp; no other host file (no /root, /home, /etc/passwd, secrets);
//   - an unprivileged per-job uid (root callers: uid_base + slot), no capabilities,
//     no_new_privs, a seccomp deny list (seccomp_filter.h);
//   - cgroup v2 memory.max / pids.max where the host has a delegated cgroup2 tree, else
//     rlimits (RLIMIT_AS for CPU jobs only; RLIMIT_NPROC per uid), RLIMIT_FSIZE,
//     RLIMIT_CORE 0, RLIMIT_NOFILE;
//   - CUDA run jobs additionally get /dev/nvidiactl, /dev/nvidia<N>, /dev/nvidia-uvm.
//   - MUSA run jobs get the Moore Threads driver's /dev/mtgpu* and /dev/dri (what the lesson's docker
//     run passes with --device).
// The deadline kill of Subprocess hits bwrap; bwrap's pid-namespace init dies with it
// (--die-with-parent) and the kernel kills everything inside, setsid'ed children too.
//
// What works is detected at run time (create()): as root with CAP_SYS_ADMIN, bwrap makes
// the namespaces itself and setpriv drops to the job uid ("privileged"); otherwise bwrap
// runs unprivileged in a user namespace ("userns", root callers drop to the job uid before
// exec'ing it). Mode auto degrades to no sandbox with a logged reason; mode on fails.
//
// Thread-safety: a Sandbox is immutable after create(); for_job() and JobSandbox::wrap()
// may be called from several threads.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "process/subprocess.h"
#include "sandbox/cgroup.h"
#include "sandbox/host_layout.h"

namespace musacoder::sandbox {

enum class SandboxMode { kOff, kOn, kAuto };
const char* sandbox_mode_name(SandboxMode m);
Result<SandboxMode> parse_sandbox_mode(const std::string& name);  // off | on | auto

// How bwrap obtains its namespaces.
enum class Strategy { kAuto, kPrivileged, kUserNamespace };
const char* strategy_name(Strategy s);

struct SandboxOptions {
  SandboxMode mode = SandboxMode::kAuto;  // --sandbox
  Strategy strategy = Strategy::kAuto;    // kAuto: privileged where possible, else userns
  std::string bwrap = "bwrap";            // bubblewrap binary (PATH lookup)
  std::string setpriv = "setpriv";        // util-linux setpriv (PATH lookup), privileged strategy only
  std::string python = "python3";         // interpreter whose installation is bound read-only
  uid_t uid_base = 61000;                 // job uids are uid_base .. uid_base + uid_count - 1 (root only)
  int uid_count = 1024;                   // concurrent evaluations at most (on this host)
  // A uid is leased by flock on <uid_lock_dir>/<uid>.lock, so that several MooreEval
  // processes on one host never run two evaluations as the same uid.
  std::filesystem::path uid_lock_dir = "/run/mooreeval-uids";
  std::size_t memory_bytes = std::size_t{8} << 30;  // per process tree: memory.max, or RLIMIT_AS (CPU jobs)
  std::size_t cuda_address_space_bytes =
      0;                     // RLIMIT_AS of CUDA jobs: 0 none, else >= 16 GiB (CUDA reserves ~14 GiB)
  int max_processes = 1024;  // pids.max, or RLIMIT_NPROC of the job uid (threads count)
  std::size_t tmp_bytes = std::size_t{512} << 20;      // private /tmp (tmpfs) size
  std::size_t max_file_bytes = std::size_t{2} << 30;   // RLIMIT_FSIZE: largest file a job can write
  int max_open_files = 4096;                           // RLIMIT_NOFILE
  std::vector<std::filesystem::path> extra_read_only;  // more host paths visible read-only in every job
  // Host variables passed into the sandbox; everything else is dropped (secrets in the
  // environment never reach a job).
  std::vector<std::string> pass_env = {"CUDA_HOME",
                                       "CUDA_PATH",
                                       "CUDA_VISIBLE_DEVICES",
                                       "CUDA_DEVICE_ORDER",
                                       "OMP_NUM_THREADS",
                                       "MKL_NUM_THREADS",
                                       "CXX",
                                       "CC",
                                       "PYTORCH_NVCC",
                                       "TORCH_CUDA_ARCH_LIST",
                                       "LANG",
                                       "LC_ALL",
                                       "LD_LIBRARY_PATH"};
  bool use_cgroup = true;               // try cgroup v2 (false: rlimits only)
  std::filesystem::path cgroup_parent;  // delegated cgroup2 dir; empty: this process's cgroup
};

enum class JobKind { kBuild, kRunCpu, kRunCuda, kRunMusa };

// What one sandboxed process may see besides the system dirs and the Python installation.
struct SandboxJob {
  JobKind kind = JobKind::kRunCpu;
  std::filesystem::path work_dir;                // read-write, the working directory; chowned to the job uid
  std::vector<std::filesystem::path> read_only;  // files or dirs, bound read-only at the same path
  int gpu_index = 0;                             // kRunCuda: which /dev/nvidia<N> (PCI bus order)
  // false: no RLIMIT_AS even without cgroup v2 (a CPU job that loads torch's CUDA libraries,
  // e.g. inspection on the cuda backend, reserves more address space than memory_bytes).
  bool limit_address_space = true;
};

class Sandbox;

// The sandbox of one evaluation: a uid leased for its lifetime (a file lock, released on
// destruction). Every process of the evaluation runs as that uid.
class JobSandbox {
 public:
  JobSandbox() = default;  // inactive: wrap() returns its input
  JobSandbox(JobSandbox&&) noexcept;
  JobSandbox& operator=(JobSandbox&&) noexcept;
  ~JobSandbox();

  bool active() const { return sandbox_ != nullptr; }
  uid_t uid() const { return uid_; }
  // The sandboxed version of `process` (its cwd becomes job.work_dir); requires the
  // Sandbox to outlive the spawned process. Fails when the job cannot be set up (e.g.
  // a CUDA job without /dev/nvidiactl).
  Result<ProcessOptions> wrap(ProcessOptions process, const SandboxJob& job) const;
  // wrap() bound to `job`, for the stages that only take a ProcessWrapper. The wrapper
  // refers to this JobSandbox: it must not be moved or destroyed while the wrapper is used.
  ProcessWrapper wrapper(SandboxJob job) const;

 private:
  friend class Sandbox;
  const Sandbox* sandbox_ = nullptr;
  uid_t uid_ = 0;
  int lock_fd_ = -1;  // holds the uid's lease
};

class Sandbox {
 public:
  // Detects the strategy and cgroup support, finds the Python installation, generates the
  // seccomp program and runs one probe process per candidate strategy.
  static Result<std::unique_ptr<Sandbox>> create(const SandboxOptions& options);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  bool active() const { return active_; }
  const std::string& reason() const { return reason_; }  // why inactive, or what was degraded
  // The resolved settings, saved with every verdict: mode, strategy, limits, cgroup, reason.
  nlohmann::json settings() const;
  // The real interpreter path (pyenv shims and the like do not work inside).
  const std::string& python_executable() const { return python_executable_; }

  // A uid for one evaluation; unavailable when all uid_count are in use on this host.
  Result<JobSandbox> for_job() const;

 private:
  friend class JobSandbox;
  Sandbox() = default;
  Result<ProcessOptions> wrap(ProcessOptions process, const SandboxJob& job, uid_t uid) const;
  Status probe(Strategy s);

  SandboxOptions options_;
  bool active_ = false;
  std::string reason_;
  Strategy strategy_ = Strategy::kAuto;
  bool drop_uid_ = false;  // root caller: run as the job uid
  std::string bwrap_path_, setpriv_path_, python_executable_;
  std::vector<std::filesystem::path> python_paths_;  // installation dirs bound read-only
  HostLayout host_;                                  // system dirs, read once
  CgroupSupport cgroup_;
  int seccomp_memfd_ = -1;
  mutable std::atomic<uint64_t> cgroup_counter_{0};  // unique per-process cgroup names
  mutable std::atomic<int> next_slot_{0};            // where the next lease search starts (spreads reuse)
};

}  // namespace musacoder::sandbox
