// The bubblewrap command line of one sandboxed process, as a pure function of a plan (no
// file-system access), so the policy can be unit-tested.
//
// Shapes: a plan lists mounts in the order bwrap performs them; bwrap_argv() returns
//   bwrap <namespaces> <mounts> [--seccomp N] --chdir D -- [setpriv ... --] <command...>
//
// Thread-safety: pure functions.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace musacoder::sandbox {

struct Mount {
  enum class Kind { kReadOnly, kReadWrite, kDevice };
  Kind kind = Kind::kReadOnly;
  std::filesystem::path path;  // bound at the same path inside
  bool optional = false;       // *-try: skipped by bwrap when the host path is missing
};

struct Symlink {
  std::string target;  // e.g. "usr/lib"
  std::filesystem::path path;
};

struct BwrapPlan {
  // false: bwrap runs as real root and creates the namespaces itself (no user namespace);
  // the command then drops to `uid` through setpriv. true: bwrap runs unprivileged and
  // maps `uid` inside to the caller's uid outside.
  bool user_namespace = false;
  uid_t uid = 65534;
  gid_t gid = 65534;
  std::string setpriv = "/usr/bin/setpriv";  // used when !user_namespace
  std::vector<Symlink> symlinks;             // /lib -> usr/lib on merged-/usr systems
  std::vector<Mount> mounts;                 // system dirs first, then the job's
  std::size_t tmp_bytes = 256 << 20;         // size of the private /tmp (tmpfs)
  bool bind_sys = false;                     // whole /sys read-only (CUDA jobs) instead of the cpu list
  int seccomp_fd = -1;                       // -1: no seccomp program
  std::filesystem::path chdir;
  std::vector<std::string> command;  // argv of the sandboxed program (argv[0] absolute or in PATH)
};

// The full argv, starting with `bwrap` (the bubblewrap binary's path).
std::vector<std::string> bwrap_argv(const std::string& bwrap, const BwrapPlan& plan);

}  // namespace musacoder::sandbox
