// The seccomp program: what it denies, and that it is valid BPF.
#include "sandbox/seccomp_filter.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace musacoder::sandbox {
namespace {

TEST(SeccompFilter, DeniesTheSyscallsTheIssueNames) {
  const auto& d = denied_syscalls();
  for (const char* name : {"ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open",
                           "userfaultfd", "keyctl", "add_key", "request_key", "mount", "umount2", "unshare",
                           "setns", "pivot_root", "kexec_load", "init_module", "finit_module"})
    EXPECT_NE(std::find(d.begin(), d.end(), name), d.end()) << name;
  // Needed by torch and the CUDA driver.
  for (const char* name : {"memfd_create", "ioctl", "mmap", "clone", "futex"})
    EXPECT_EQ(std::find(d.begin(), d.end(), name), d.end()) << name;
}

TEST(SeccompFilter, ExportsAWholeNumberOfBpfInstructionsAndReopensAtOffsetZero) {
  auto fd = seccomp_program_memfd();
  ASSERT_TRUE(fd.ok()) << fd.status().to_string();
  struct stat st {};
  ASSERT_EQ(::fstat(*fd, &st), 0);
  EXPECT_GT(st.st_size, 8 * 20);  // one instruction is 8 bytes; dozens of rules
  EXPECT_EQ(st.st_size % 8, 0);
  for (int i = 0; i < 2; ++i) {  // each reader starts at offset 0
    auto r = reopen_for_reading(*fd, 10);
    ASSERT_TRUE(r.ok());
    EXPECT_GE(*r, 10);
    char buf[8];
    EXPECT_EQ(::read(*r, buf, sizeof buf), 8);
    ::close(*r);
  }
  ::close(*fd);
}

}  // namespace
}  // namespace musacoder::sandbox
