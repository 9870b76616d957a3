// The seccomp program every sandboxed process runs under: a deny list on top of "allow",
// generated with libseccomp and exported as classic BPF for bwrap's --seccomp FD.
//
// Denied (EPERM): cross-process inspection (ptrace, process_vm_readv/writev,
// kcmp), kernel attack surface a kernel candidate never needs (bpf, perf_event_open,
// userfaultfd, io_uring, keyrings, kernel modules, kexec), and everything that would undo
// the sandbox (mount and the new mount API, pivot_root, chroot, unshare, setns, clone with
// namespace flags). clone3 answers ENOSYS so that libc falls back to clone, whose flags the
// filter can inspect. Foreign syscall ABIs (i386, x32) kill the process (libseccomp's
// default for a non-native architecture). memfd_create and ioctl stay allowed: the CUDA
// driver and torch use them.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::sandbox {

// Syscall names the filter denies with EPERM (unconditionally; clone is handled apart).
const std::vector<std::string>& denied_syscalls();

// A sealed memfd holding the BPF program (owned by the caller, O_CLOEXEC). bwrap reads a
// --seccomp fd to its end, so give every process its own open file description
// (reopen_for_reading) rather than this fd.
Result<int> seccomp_program_memfd();

// A fresh read-only open file description of `memfd` at offset 0, duplicated to a
// number >= min_fd (O_CLOEXEC). Owned by the caller.
Result<int> reopen_for_reading(int memfd, int min_fd);

}  // namespace musacoder::sandbox
