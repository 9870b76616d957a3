// The bwrap command line as policy: namespaces, mounts, identity, limits.
#include "sandbox/bwrap_args.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "sandbox/sandbox.h"

namespace musacoder::sandbox {
namespace {

using Args = std::vector<std::string>;

bool has(const Args& a, std::initializer_list<std::string> seq) {
  Args s(seq);
  return std::search(a.begin(), a.end(), s.begin(), s.end()) != a.end();
}

std::ptrdiff_t index_of(const Args& a, std::initializer_list<std::string> seq) {
  Args s(seq);
  auto it = std::search(a.begin(), a.end(), s.begin(), s.end());
  return it == a.end() ? -1 : it - a.begin();
}

BwrapPlan basic_plan() {
  BwrapPlan p;
  p.uid = 61003;
  p.gid = 61003;
  p.symlinks = {{"usr/lib", "/lib"}};
  p.mounts = {{Mount::Kind::kReadOnly, "/usr"},
              {Mount::Kind::kReadOnly, "/opt/py"},
              {Mount::Kind::kReadOnly, "/opt/py/lib/site-packages"},  // inside /opt/py: redundant
              {Mount::Kind::kReadOnly, "/root/.pyenv/versions/3.11"},
              {Mount::Kind::kReadOnly, "/tmp/job/candidate.py"},
              {Mount::Kind::kReadWrite, "/tmp/job/candidate"}};
  p.tmp_bytes = 1 << 20;
  p.seccomp_fd = 11;
  p.chdir = "/tmp/job/candidate";
  p.command = {"/opt/py/bin/python3", "-c", "pass"};
  return p;
}

TEST(BwrapArgs, EveryNamespaceButTheUserOneIsPrivateAndNoNetwork) {
  Args a = bwrap_argv("/usr/bin/bwrap", basic_plan());
  EXPECT_EQ(a.front(), "/usr/bin/bwrap");
  for (const char* ns : {"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"})
    EXPECT_TRUE(has(a, {ns})) << ns;
  EXPECT_TRUE(has(a, {"--die-with-parent"}));
  EXPECT_TRUE(has(a, {"--new-session"}));
  EXPECT_FALSE(has(a, {"--share-net"}));
  EXPECT_FALSE(has(a, {"--unshare-user"}));  // privileged: no user namespace
}

TEST(BwrapArgs, PrivilegedDropsCapabilitiesAndRunsTheCommandThroughSetpriv) {
  Args a = bwrap_argv("bwrap", basic_plan());
  EXPECT_TRUE(has(a, {"--cap-drop", "ALL"}));
  auto sep = index_of(a, {"--"});
  ASSERT_GE(sep, 0);
  Args tail(a.begin() + sep + 1, a.end());
  Args expected = {"/usr/bin/setpriv",
                   "--reuid",
                   "61003",
                   "--regid",
                   "61003",
                   "--clear-groups",
                   "--inh-caps=-all",
                   "--bounding-set=-all",
                   "--no-new-privs",
                   "--",
                   "/opt/py/bin/python3",
                   "-c",
                   "pass"};
  EXPECT_EQ(tail, expected);
}

TEST(BwrapArgs, UserNamespaceMapsTheJobUidAndDisablesNestedNamespaces) {
  BwrapPlan p = basic_plan();
  p.user_namespace = true;
  Args a = bwrap_argv("bwrap", p);
  EXPECT_TRUE(has(a, {"--unshare-user", "--uid", "61003", "--gid", "61003", "--disable-userns"}));
  EXPECT_FALSE(has(a, {"--cap-add", "CAP_SETUID"}));
  EXPECT_FALSE(has(a, {"/usr/bin/setpriv"}));
  EXPECT_EQ(a.back(), "pass");
}

TEST(BwrapArgs, MountsAreReadOnlyExceptTheWorkDirAndParentsAreTraversable) {
  Args a = bwrap_argv("bwrap", basic_plan());
  EXPECT_TRUE(has(a, {"--ro-bind", "/usr", "/usr"}));
  EXPECT_TRUE(has(a, {"--symlink", "usr/lib", "/lib"}));
  EXPECT_TRUE(has(a, {"--ro-bind", "/opt/py", "/opt/py"}));
  EXPECT_FALSE(has(a, {"--ro-bind", "/opt/py/lib/site-packages", "/opt/py/lib/site-packages"}));
  EXPECT_TRUE(has(a, {"--bind", "/tmp/job/candidate", "/tmp/job/candidate"}));
  EXPECT_TRUE(has(a, {"--ro-bind", "/tmp/job/candidate.py", "/tmp/job/candidate.py"}));
  // /root is 0700 on the host; its stand-in must be searchable by the job uid.
  auto root_dir = index_of(a, {"--perms", "0755", "--dir", "/root"});
  auto pyenv = index_of(a, {"--ro-bind", "/root/.pyenv/versions/3.11"});
  ASSERT_GE(root_dir, 0);
  EXPECT_LT(root_dir, pyenv);
  EXPECT_TRUE(has(a, {"--perms", "0755", "--dir", "/tmp/job"}));
  EXPECT_FALSE(has(a, {"--dir", "/tmp"}));  // the tmpfs itself
  // Nothing else of the host: no bind of / or of /etc as a whole, no /home.
  for (const char* p : {"/", "/etc", "/home", "/root"}) EXPECT_FALSE(has(a, {"--ro-bind", p, p})) << p;
  EXPECT_FALSE(has(a, {"--dev-bind", "/dev", "/dev"}));
}

TEST(BwrapArgs, PrivateTmpHasItsSizeAndSeccompAndChdirArePassed) {
  Args a = bwrap_argv("bwrap", basic_plan());
  EXPECT_TRUE(has(a, {"--perms", "1777", "--size", "1048576", "--tmpfs", "/tmp"}));
  EXPECT_TRUE(has(a, {"--seccomp", "11"}));
  EXPECT_TRUE(has(a, {"--chdir", "/tmp/job/candidate"}));
  EXPECT_TRUE(has(a, {"--proc", "/proc", "--dev", "/dev"}));
  // The tmpfs comes before the job dirs mounted inside it.
  EXPECT_LT(index_of(a, {"--tmpfs", "/tmp"}), index_of(a, {"--bind", "/tmp/job/candidate"}));
}

TEST(BwrapArgs, CudaDevicesAreBoundOneByOne) {
  BwrapPlan p = basic_plan();
  p.bind_sys = true;
  for (const char* d : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0"})
    p.mounts.push_back({Mount::Kind::kDevice, d});
  Args a = bwrap_argv("bwrap", p);
  for (const char* d : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0"})
    EXPECT_TRUE(has(a, {"--dev-bind", d, d})) << d;
  EXPECT_FALSE(has(a, {"--dev-bind", "/dev/nvidia-uvm-tools", "/dev/nvidia-uvm-tools"}));
  EXPECT_FALSE(has(a, {"--dir", "/dev"}));
  EXPECT_TRUE(has(a, {"--ro-bind", "/sys", "/sys"}));
  EXPECT_LT(index_of(a, {"--dev", "/dev"}), index_of(a, {"--dev-bind", "/dev/nvidiactl"}));
}

TEST(BwrapArgs, CpuJobsSeeOnlyTheCpuTopologyOfSysfs) {
  Args a = bwrap_argv("bwrap", basic_plan());
  EXPECT_FALSE(has(a, {"--ro-bind", "/sys", "/sys"}));
  EXPECT_TRUE(has(a, {"--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"}));
}

TEST(SandboxMode, ParsesTheThreeModesAndRejectsOthers) {
  EXPECT_EQ(*parse_sandbox_mode("on"), SandboxMode::kOn);
  EXPECT_EQ(*parse_sandbox_mode("off"), SandboxMode::kOff);
  EXPECT_EQ(*parse_sandbox_mode("auto"), SandboxMode::kAuto);
  auto bad = parse_sandbox_mode("yes");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("on, off or auto"), std::string::npos);
}

TEST(SandboxOptions, RefusesACudaAddressSpaceLimitUnder16GiB) {
  SandboxOptions o;
  o.cuda_address_space_bytes = std::size_t{8} << 30;
  auto s = Sandbox::create(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("16 GiB"), std::string::npos);
}

TEST(SandboxOptions, OffIsInactiveAndWrapsNothing) {
  SandboxOptions o;
  o.mode = SandboxMode::kOff;
  auto s = Sandbox::create(o);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE((*s)->active());
  auto job = (*s)->for_job();
  ASSERT_TRUE(job.ok());
  EXPECT_FALSE(job->active());
  ProcessOptions p;
  p.argv = {"/bin/true"};
  auto w = job->wrap(p, {JobKind::kRunCpu, "/tmp", {}, 0});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->argv, p.argv);
  EXPECT_EQ((*s)->settings()["active"], false);
}

TEST(SandboxOptions, OnFailsClearlyAndAutoDegradesWhenBubblewrapIsMissing) {
  SandboxOptions o;
  o.bwrap = "no-such-bwrap-binary";
  o.mode = SandboxMode::kOn;
  auto on = Sandbox::create(o);
  ASSERT_FALSE(on.ok());
  EXPECT_NE(on.status().message().find("bubblewrap"), std::string::npos);
  o.mode = SandboxMode::kAuto;
  auto autod = Sandbox::create(o);
  ASSERT_TRUE(autod.ok());
  EXPECT_FALSE((*autod)->active());
  EXPECT_NE((*autod)->reason().find("bubblewrap"), std::string::npos);
  EXPECT_EQ((*autod)->settings()["active"], false);
}

}  // namespace
}  // namespace musacoder::sandbox
