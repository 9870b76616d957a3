// cgroup v2 limits for one sandboxed process tree: a child cgroup with memory.max,
// memory.swap.max = 0 and pids.max, joined by the child between fork and exec, killed
// (cgroup.kill) and removed when the process is done.
//
// Where /sys/fs/cgroup is not cgroup2 (cgroup v1 hosts), or the parent is not writable or
// cannot delegate the memory and pids controllers, detect_cgroup() says why and the
// sandbox relies on rlimits instead.
//
// Thread-safety: detect_cgroup() is pure apart from a probe cgroup it creates and removes;
// a JobCgroup is used by one thread.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "core/status.h"

namespace musacoder::sandbox {

struct CgroupSupport {
  bool available = false;
  std::filesystem::path parent;  // per-job cgroups are created under it
  std::string reason;            // why not, when !available
};

// `parent`: a delegated cgroup2 directory; empty = the cgroup this process is in.
CgroupSupport detect_cgroup(const std::filesystem::path& parent);

class JobCgroup {
 public:
  static Result<std::unique_ptr<JobCgroup>> create(const std::filesystem::path& parent,
                                                   const std::string& name, std::size_t memory_bytes,
                                                   int max_pids);
  ~JobCgroup();  // kills what is left inside and removes the cgroup
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;

  // An O_WRONLY fd of cgroup.procs; the child writes "0" to it to join.
  int procs_fd() const { return procs_fd_; }
  const std::filesystem::path& path() const { return path_; }
  // Whether the memory limit was hit (memory.events oom_kill > 0).
  bool oom_killed() const;

 private:
  JobCgroup() = default;
  std::filesystem::path path_;
  int procs_fd_ = -1;
};

}  // namespace musacoder::sandbox
