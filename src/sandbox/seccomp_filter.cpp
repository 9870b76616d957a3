#include "sandbox/seccomp_filter.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace musacoder::sandbox {

const std::vector<std::string>& denied_syscalls() {
  static const std::vector<std::string> names = {
      // another process's memory or state
      "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
      // kernel attack surface
      "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
      "add_key", "request_key", "keyctl", "init_module", "finit_module", "delete_module", "kexec_load",
      "kexec_file_load", "lookup_dcookie", "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm",
      "swapon", "swapoff", "reboot", "acct", "quotactl", "syslog", "personality",
      // undoing the sandbox
      "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "fsopen", "fsconfig", "fsmount",
      "fspick", "move_mount", "open_tree", "mount_setattr",
      // state that would outlive a job in a warm runner's ipc namespace and cannot be
      // listed to be removed (SysV objects can: the zygote removes them between jobs)
      "mq_open"};
  return names;
}

namespace {

struct FilterContext {
  scmp_filter_ctx ctx = nullptr;
  ~FilterContext() {
    if (ctx) seccomp_release(ctx);
  }
};

Status add(scmp_filter_ctx ctx, uint32_t action, const std::string& name, unsigned n = 0,
           const scmp_arg_cmp* arg = nullptr) {
  int nr = seccomp_syscall_resolve_name(name.c_str());
  if (nr == __NR_SCMP_ERROR) return {};  // not on this architecture: nothing to deny
  int rc = n ? seccomp_rule_add_array(ctx, action, nr, n, arg) : seccomp_rule_add(ctx, action, nr, 0);
  if (rc != 0) return internal_error("seccomp rule for " + name + ": " + std::strerror(-rc));
  return {};
}

}  // namespace

Result<int> seccomp_program_memfd() {
  FilterContext f;
  f.ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!f.ctx) return internal_error("seccomp_init failed");
  for (const auto& name : denied_syscalls()) MC_RETURN_IF_ERROR(add(f.ctx, SCMP_ACT_ERRNO(EPERM), name));
  // clone: threads and fork are fine, new namespaces are not.
  // One rule per flag: "any of these bits set" is not a single masked comparison.
  for (uint64_t flag :
       {uint64_t{CLONE_NEWNS}, uint64_t{CLONE_NEWUTS}, uint64_t{CLONE_NEWIPC}, uint64_t{CLONE_NEWUSER},
        uint64_t{CLONE_NEWPID}, uint64_t{CLONE_NEWNET}, uint64_t{CLONE_NEWCGROUP}, uint64_t{CLONE_NEWTIME}}) {
    scmp_arg_cmp has_flag = SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag);
    MC_RETURN_IF_ERROR(add(f.ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, &has_flag));
  }
  MC_RETURN_IF_ERROR(add(f.ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3"));

  int fd = ::memfd_create("mooreeval-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return internal_error(std::string("memfd_create: ") + std::strerror(errno));
  if (int rc = seccomp_export_bpf(f.ctx, fd); rc != 0) {
    ::close(fd);
    return internal_error(std::string("seccomp_export_bpf: ") + std::strerror(-rc));
  }
  ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  return fd;
}

Result<int> reopen_for_reading(int memfd, int min_fd) {
  std::string path = "/proc/self/fd/" + std::to_string(memfd);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return internal_error("reopen " + path + ": " + std::strerror(errno));
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, min_fd);
  int e = errno;
  ::close(fd);
  if (moved < 0) return internal_error(std::string("fcntl(F_DUPFD_CLOEXEC): ") + std::strerror(e));
  return moved;
}

}  // namespace musacoder::sandbox
