// Real sandboxed processes (bubblewrap, seccomp, rlimits/cgroups): each test runs a small
// program inside and checks what it could and could not do, with an unsandboxed control
// where the claim is "cannot" (so the test fails if the sandbox is not doing the work).
#include "sandbox/sandbox.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "core/files.h"
#include "process/subprocess.h"

namespace musacoder::sandbox {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// One job: a private root dir (like the evaluator's), a work dir inside, a canary beside it.
struct Job {
  TempDir root;
  fs::path work, canary;
  static Job make() {
    auto r = TempDir::create("mooreeval-sbx-test-");
    EXPECT_TRUE(r.ok());
    Job j{std::move(r).value(), {}, {}};
    j.work = fs::absolute(j.root.path()) / "work";
    j.canary = fs::absolute(j.root.path()) / "canary.txt";
    fs::create_directories(j.work);
    EXPECT_TRUE(write_file_atomic(j.canary, "CANARY-7f3e9b1d host secret\n").ok());
    ::chmod(j.root.path().c_str(), 0711);
    return j;
  }
};

std::unique_ptr<Sandbox> make_sandbox(SandboxOptions o = {}) {
  o.mode = SandboxMode::kOn;
  auto s = Sandbox::create(o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(s).value() : nullptr;
}

Sandbox* default_sandbox() {
  static std::unique_ptr<Sandbox> s = make_sandbox();
  return s.get();
}

#define REQUIRE_SANDBOX(sb) \
  if (!(sb)) GTEST_SKIP() << "no sandbox on this machine (see the failure above)"

ProcessOptions python(const std::string& code, int deadline_ms = 20000) {
  ProcessOptions p;
  p.argv = {"python3", "-S", "-c", code};
  p.deadline = milliseconds(deadline_ms);
  return p;
}

ProcessResult run_in(const JobSandbox& jail, const Job& job, ProcessOptions p, std::vector<fs::path> ro = {},
                     JobKind kind = JobKind::kRunCpu) {
  auto w = jail.wrap(std::move(p), {kind, job.work, std::move(ro), 0});
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  if (!w.ok()) return {};
  auto r = run_process(*w);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : ProcessResult{};
}

ProcessResult run_plain(ProcessOptions p) {
  auto r = run_process(p);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : ProcessResult{};
}

// Host pids whose command line contains `marker`.
std::vector<int> host_processes_with(const std::string& marker) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream f(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(f)), {});
    if (cmd.find(marker) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

// Host pids running as `uid`.
int host_processes_of_uid(uid_t uid) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    struct stat st {};
    const std::string name = e.path().filename();
    if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0])) &&
        ::stat(e.path().c_str(), &st) == 0 && st.st_uid == uid)
      ++n;
  }
  return n;
}

TEST(Sandbox, HasNoNetworkNotEvenLoopback) {
  Sandbox* sb = default_sandbox();
  REQUIRE_SANDBOX(sb);
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string code =
      "import socket; s = socket.socket(); s.settimeout(3); print(s.connect_ex(('127.0.0.1', " +
      std::to_string(ntohs(addr.sin_port)) + ")))";
  auto control = run_plain(python(code));
  EXPECT_EQ(control.stdout_text, "0\n") << "the test's listener must be reachable without the sandbox";
  auto job = Job::make();
  auto jail = sb->for_job();
  ASSERT_TRUE(jail.ok());
  auto r = run_in(*jail, job, python(code));
  EXPECT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_NE(r.stdout_text, "0\n");
  EXPECT_FALSE(r.stdout_text.empty());
  ::close(listener);
}

TEST(Sandbox, HostFilesOutsideTheBindsAreInvisible) {
  Sandbox* sb = default_sandbox();
  REQUIRE_SANDBOX(sb);
  auto job = Job::make();
  const std::string code =
      "import os\n"
      "for p in ['" +
      job.canary.string() +
      "', '/etc/passwd', '/etc/shadow', '/etc/hostname']:\n"
      "    try:\n"
      "        print('READ', p, open(p).read())\n"
      "    except OSError as e:\n"
      "        print('denied', p, e.errno)\n"
      "print('etc', sorted(os.listdir('/etc')))\n"
      "print('home', os.path.exists('/home'), 'root', os.listdir('/root') if os.path.isdir('/root') else "
      "None)\n";
  auto control = run_plain(python(code));
  EXPECT_NE(control.stdout_text.find("CANARY-7f3e9b1d"), std::string::npos) << "control must read the canary";
  auto jail = sb->for_job();
  ASSERT_TRUE(jail.ok());
  auto r = run_in(*jail, job, python(code));
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("CANARY-7f3e9b1d"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("READ"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("etc ['alternatives', 'ld.so.cache'"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("home False"), std::string::npos) << r.stdout_text;
}

TEST(Sandbox, WritesLandOnlyInTheWorkDir) {
  Sandbox* sb = default_sandbox();
  REQUIRE_SANDBOX(sb);
  auto job = Job::make();
  const std::string tmp_marker = "mooreeval-sbx-tmp-" + std::to_string(::getpid());
  const std::string code =
      "import os\n"
      "open('inside.txt', 'w').write('ok')\n"
      "open('/tmp/" +
      tmp_marker +
      "', 'w').write('private tmp')\n"
      "for p in ['/usr/x', '/etc/x', '/x', '" +
      job.root.path().string() + "/x', '" + job.canary.string() +
      "']:\n"
      "    try:\n"
      "        open(p, 'w').write('escape')\n"
      "        print('WROTE', p)\n"
      "    except OSError as e:\n"
      "        print('denied', p, e.errno)\n";
  auto jail = sb->for_job();
  ASSERT_TRUE(jail.ok());
  auto r = run_in(*jail, job, python(code));
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("WROTE"), std::string::npos) << r.stdout_text;
  EXPECT_TRUE(fs::exists(job.work / "inside.txt"));
  EXPECT_FALSE(fs::exists(job.root.path() / "x"));
  EXPECT_FALSE(fs::exists(fs::path("/tmp") / tmp_marker)) << "/tmp inside must be private";
  auto canary = read_file(job.canary);
  EXPECT_TRUE(canary.ok() && canary->starts_with("CANARY"));
  if (::geteuid() == 0) {
    struct stat st {};
    ASSERT_EQ(::stat((job.work / "inside.txt").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, jail->uid());
  }
}

TEST(Sandbox, RunsAsTheJobUidWithoutCapabilitiesInItsOwnPidNamespace) {
  Sandbox* sb = default_sandbox();
  REQUIRE_SANDBOX(sb);
  auto job = Job::make();
  const std::string code =
      "import os\n"
      "st = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)\n"
      "print('uid', os.getuid(), os.geteuid())\n"
      "print('caps', st['CapEff'].strip(), st['CapBnd'].strip(), 'nnp', st['NoNewPrivs'].strip(), 'seccomp',"
      " st['Seccomp'].strip())\n"
      "print('pids', len([d for d in os.listdir('/proc') if d.isdigit()]))\n"
      "try:\n"
      "    os.kill(" +
      std::to_string(::getpid()) +
      ", 0)\n"
      "    print('SEES HOST PID')\n"
      "except OSError as e:\n"
      "    print('host pid unreachable', e.errno)\n";
  auto jail = sb->for_job();
  ASSERT_TRUE(jail.ok());
  auto r = run_in(*jail, job, python(code));
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  const std::string uid = std::to_string(jail->uid());
  EXPECT_NE(r.stdout_text.find("uid " + uid + " " + uid), std::string::npos) << r.stdout_text;
  if (::geteuid() == 0) {
    EXPECT_GE(jail->uid(), 61000u);
    EXPECT_NE(r.stdout_text.find("caps 0000000000000000 0000000000000000"), std::string::npos)
        << r.stdout_text;
  }
  EXPECT_NE(r.stdout_text.find("nnp 1 seccomp 2"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("SEES HOST PID"), std::string::npos) << r.stdout_text;
  // bwrap's init, python (and nothing of the host).
  EXPECT_NE(r.stdout_text.find("pids 2\n"), std::string::npos) << r.stdout_text;
}

TEST(Sandbox, SeccompDeniesPtraceBpfUserfaultfdAndNamespaces) {
  Sandbox* sb = default_sandbox();
  REQUIRE_SANDBOX(sb);
  auto job = Job::make();
  const std::string code =
      "import ctypes, os, platform\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "def show(name, rc):\n"
      "    print(name, rc, ctypes.get_errno())\n"
      "show('ptrace', libc.ptrace(0, 0, None, None))\n"
      "show('unshare', libc.unshare(0x10000000))\n"
      "show('mount', libc.mount(b'none', b'/tmp', b'tmpfs', 0, None))\n"
      "if platform.machine() == 'x86_64':\n"
      "    for name, nr in [('bpf', 321), ('userfaultfd', 323), ('perf_event_open', 298),"
      " ('process_vm_readv', 310), ('keyctl', 250)]:\n"
      "        show(name, libc.syscall(nr, 0, 0, 0, 0, 0))\n"
      "fd = os.memfd_create('ok')\n"
      "print('memfd', fd >= 0)\n"
      "pid = os.fork()\n"
      "if pid == 0: os._exit(7)\n"
      "print('fork', os.waitpid(pid, 0)[1] >> 8)\n";
  auto control = run_plain(python(code));
  EXPECT_EQ(control.stdout_text.find("ptrace -1 1\n"), std::string::npos)
      << "unsandboxed, PTRACE_TRACEME must succeed: " << control.stdout_text;
  auto jail = sb->for_job();
  ASSERT_TRUE(jail.ok());
  auto r = run_in(*jail, job, python(code));
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  for (const char* name : {"ptrace", "unshare", "mount"})
    EXPECT_NE(r.stdout_text.find(std::string(name) + " -1 1\n"), std::string::npos)
        << name << ": " << r.stdout_text;
#if defined(__x86_64__)
  for (const char* name : {"bpf", "userfaultfd", "perf_event_open", "process_vm_readv", "keyctl"})
    EXPECT_NE(r.stdout_text.find(std::string(name) + " -1 1\n"), std::string::npos)
        << name << ": " << r.stdout_text;
#endif
  EXPECT_NE(r.stdout_text.find("memfd True"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("fork 7"), std::string::npos) << r.stdout_text;
}

TEST(Sandbox, EnvironmentCarriesNoHostSecrets) {
  Sandbox* sb = default_sandbox();
  REQUIRE_SANDBOX(sb);
  ::setenv("MOOREEVAL_TEST_SECRET", "hunter2-token", 1);
  auto job = Job::make();
  auto p = python("import os; print(sorted(os.environ.items()))");
  p.env_set["JOB_VAR"] = "given";
  auto jail = sb->for_job();
  ASSERT_TRUE(jail.ok());
  auto r = run_in(*jail, job, p);
  ::unsetenv("MOOREEVAL_TEST_SECRET");
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("hunter2-token"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("('JOB_VAR', 'given')"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("('HOME', '/tmp')"), std::string::npos) << r.stdout_text;
}

TEST(Sandbox, CompilerCannotEchoHostFilesIntoItsLog) {
  Sandbox* sb = default_sandbox();
  REQUIRE_SANDBOX(sb);
  auto job = Job::make();
  ASSERT_TRUE(write_file_atomic(job.work / "leak.cpp", "#include \"" + job.canary.string() + "\"\n").ok());
  ASSERT_TRUE(write_file_atomic(job.work / "passwd.cpp", "#include \"/etc/passwd\"\n").ok());
  ProcessOptions p;
  p.argv = {"c++", "-fsyntax-only", (job.work / "leak.cpp").string()};
  p.cwd = job.work.string();
  auto control = run_plain(p);
  EXPECT_NE(control.stderr_text.find("CANARY-7f3e9b1d"), std::string::npos) << "control must echo the canary";
  auto jail = sb->for_job();
  ASSERT_TRUE(jail.ok());
  for (const char* file : {"leak.cpp", "passwd.cpp"}) {
    p.argv = {"c++", "-fsyntax-only", (job.work / file).string()};
    auto r = run_in(*jail, job, p, {}, JobKind::kBuild);
    EXPECT_FALSE(r.succeeded()) << file;
    EXPECT_EQ(r.stderr_text.find("CANARY-7f3e9b1d"), std::string::npos) << r.stderr_text;
    EXPECT_EQ(r.stderr_text.find("root:x:0:0"), std::string::npos) << r.stderr_text;
    EXPECT_NE(r.stderr_text.find("No such file"), std::string::npos) << r.stderr_text;
  }
  // A legitimate translation unit compiles.
  ASSERT_TRUE(write_file_atomic(job.work / "ok.cpp",
                                "#include <vector>\nint f() { return std::vector<int>(3).size(); }\n")
                  .ok());
  p.argv = {"c++", "-c", (job.work / "ok.cpp").string(), "-o", (job.work / "ok.o").string()};
  auto ok = run_in(*jail, job, p, {}, JobKind::kBuild);
  EXPECT_TRUE(ok.succeeded()) << ok.stderr_text;
  EXPECT_TRUE(fs::exists(job.work / "ok.o"));
}

TEST(Sandbox, DeadlineKillsChildrenThatCalledSetsid) {
  Sandbox* sb = default_sandbox();
  REQUIRE_SANDBOX(sb);
  auto job = Job::make();
  const std::string marker = std::to_string(4000 + ::getpid() % 1000) + ".4242";
  const std::string code =
      "import os, time\n"
      "if os.fork() == 0:\n"
      "    os.setsid()\n"
      "    if os.fork() == 0:\n"
      "        os.execvp('sleep', ['sleep', '" +
      marker +
      "'])\n"
      "    os._exit(0)\n"
      "time.sleep(1000)\n";
  auto jail = sb->for_job();
  ASSERT_TRUE(jail.ok());
  auto w = jail->wrap(python(code, 4000), {JobKind::kRunCpu, job.work, {}, 0});
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  auto child = Subprocess::spawn(*w);
  ASSERT_TRUE(child.ok());
  bool seen = false;
  for (int i = 0; i < 60 && !seen; ++i) {
    seen = !host_processes_with(marker).empty();
    if (!seen) std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(seen) << "the setsid'ed sleeper never started";
  auto r = (*child)->wait();
  EXPECT_TRUE(r.timed_out);
  bool gone = false;
  for (int i = 0; i < 60 && !gone; ++i) {
    gone = host_processes_with(marker).empty();
    if (!gone) std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(gone) << "a setsid'ed child survived the deadline kill";
}

TEST(Sandbox, CudaJobsGetExactlyTheNvidiaNodesOrFailClearly) {
  Sandbox* sb = default_sandbox();
  REQUIRE_SANDBOX(sb);
  auto job = Job::make();
  auto jail = sb->for_job();
  ASSERT_TRUE(jail.ok());
  auto w = jail->wrap(python("pass"), {JobKind::kRunCuda, job.work, {}, 0});
  if (!fs::exists("/dev/nvidiactl")) {
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.status().message().find("/dev/nvidiactl"), std::string::npos) << w.status().message();
    return;
  }
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  int device_binds = 0;
  for (std::size_t i = 0; i + 1 < w->argv.size(); ++i)
    if (w->argv[i] == "--dev-bind") {
      ++device_binds;
      EXPECT_TRUE(w->argv[i + 1].starts_with("/dev/nvidia")) << w->argv[i + 1];
      EXPECT_NE(w->argv[i + 1], "/dev/nvidia-uvm-tools");
    }
  EXPECT_EQ(device_binds, 3);
}

// Limits, with small values so that hitting them is quick.
class SandboxLimits : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SandboxOptions o;
    o.max_processes = 48;
    o.max_file_bytes = 1 << 20;
    o.memory_bytes = std::size_t{1} << 30;
    o.tmp_bytes = 8 << 20;
    sandbox_ = make_sandbox(o).release();
  }
  static void TearDownTestSuite() { delete sandbox_; }
  static Sandbox* sandbox_;
};
Sandbox* SandboxLimits::sandbox_ = nullptr;

TEST_F(SandboxLimits, ForkBombIsContainedAndLeavesNoProcessBehind) {
  REQUIRE_SANDBOX(sandbox_);
  if (::geteuid() != 0 && !sandbox_->settings().value("cgroup", nlohmann::json()).is_string())
    GTEST_SKIP() << "not root and no cgroup v2: no process limit to test";
  auto job = Job::make();
  const std::string code =
      "import os, time\n"
      "n = 0\n"
      "while n < 100000:\n"
      "    try:\n"
      "        pid = os.fork()\n"
      "    except OSError:\n"
      "        break\n"
      "    if pid == 0:\n"
      "        time.sleep(60)\n"
      "        os._exit(0)\n"
      "    n += 1\n"
      "print('forked', n)\n";
  auto jail = sandbox_->for_job();
  ASSERT_TRUE(jail.ok());
  auto r = run_in(*jail, job, python(code, 30000));
  ASSERT_TRUE(r.succeeded()) << r.describe() << r.stderr_text;
  ASSERT_TRUE(r.stdout_text.starts_with("forked ")) << r.stdout_text;
  EXPECT_LT(std::stoi(r.stdout_text.substr(7)), 48) << r.stdout_text;
  if (::geteuid() == 0) {
    int left = -1;
    for (int i = 0; i < 60 && left != 0; ++i) {
      left = host_processes_of_uid(jail->uid());
      if (left) std::this_thread::sleep_for(milliseconds(50));
    }
    EXPECT_EQ(left, 0) << "processes of the job uid outlived the job";
  }
}

TEST_F(SandboxLimits, FileSizeIsCapped) {
  REQUIRE_SANDBOX(sandbox_);
  auto job = Job::make();
  const std::string code =
      "try:\n"
      "    open('big.bin', 'wb').write(b'x' * (2 << 20))\n"
      "    print('wrote all')\n"
      "except OSError as e:\n"
      "    print('capped', e.errno)\n";
  auto jail = sandbox_->for_job();
  ASSERT_TRUE(jail.ok());
  auto r = run_in(*jail, job, python(code));
  EXPECT_EQ(r.stdout_text.find("wrote all"), std::string::npos) << r.stdout_text;
  std::error_code ec;
  EXPECT_LE(fs::file_size(job.work / "big.bin", ec), std::uintmax_t{1} << 20);
}

TEST_F(SandboxLimits, MemoryIsCapped) {
  REQUIRE_SANDBOX(sandbox_);
  auto job = Job::make();
  const std::string code =
      "small = bytearray(128 << 20)\n"
      "print('small ok', flush=True)\n"
      "try:\n"
      "    big = bytearray(3 << 30)\n"
      "    big[::4096] = b'x' * len(big[::4096])\n"
      "    print('GOT 3 GiB')\n"
      "except MemoryError:\n"
      "    print('MemoryError')\n";
  auto jail = sandbox_->for_job();
  ASSERT_TRUE(jail.ok());
  auto r = run_in(*jail, job, python(code));
  EXPECT_NE(r.stdout_text.find("small ok"), std::string::npos) << r.stdout_text << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("GOT 3 GiB"), std::string::npos) << r.stdout_text;
  // rlimit: MemoryError; cgroup memory.max: the OOM killer ends the process.
  EXPECT_TRUE(r.stdout_text.find("MemoryError") != std::string::npos || !r.succeeded()) << r.describe();
}

TEST_F(SandboxLimits, PrivateTmpIsSizeLimited) {
  REQUIRE_SANDBOX(sandbox_);
  auto job = Job::make();
  const std::string code =
      "import errno\n"
      "try:\n"
      "    for i in range(12):\n"  // 12 files of 900 KiB: each under the file cap, together over 8 MiB
      "        with open('/tmp/fill%d' % i, 'wb') as f:\n"
      "            f.write(b'x' * (900 << 10))\n"
      "    print('FILLED')\n"
      "except OSError as e:\n"
      "    print('full', errno.errorcode[e.errno])\n";
  auto jail = sandbox_->for_job();
  ASSERT_TRUE(jail.ok());
  auto r = run_in(*jail, job, python(code));
  EXPECT_EQ(r.stdout_text.find("FILLED"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("full ENOSPC"), std::string::npos) << r.stdout_text << r.stderr_text;
}

TEST(SandboxStrategy, UserNamespaceStrategyWorksWithASystemPython) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  SandboxOptions o;
  o.strategy = Strategy::kUserNamespace;
  o.python = "/usr/bin/python3";
  o.mode = SandboxMode::kOn;
  auto sb = Sandbox::create(o);
  if (!sb.ok()) {
    auto restrict = read_file("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 16);
    if (restrict.ok()&& restrict->starts_with("1"))  // Ubuntu >= 23.10 without a bwrap profile
      GTEST_SKIP() << "unprivileged user namespaces are restricted by AppArmor here: "
                   << sb.status().message();
  }
  ASSERT_TRUE(sb.ok()) << sb.status().to_string();
  EXPECT_EQ((*sb)->settings()["strategy"], "userns");
  auto job = Job::make();
  auto jail = (*sb)->for_job();
  ASSERT_TRUE(jail.ok());
  ProcessOptions p;
  p.argv = {
      "/usr/bin/python3", "-S", "-c",
      "import os\ntry:\n    open('" + job.canary.string() +
          "').read(); print('READ')\nexcept OSError:\n    print('denied')\nprint('uid', os.getuid())\n"};
  auto r = run_in(*jail, job, p);
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("denied"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("uid " + std::to_string(jail->uid())), std::string::npos) << r.stdout_text;
}

TEST(SandboxPython, AVirtualEnvironmentKeepsItsSitePackagesInside) {
  // The GPU machine's torch lives in a venv: its bin/python, not the base interpreter the
  // symlink points to, must run inside, or the venv's packages are gone.
  auto dir = TempDir::create("mooreeval-venv-test-");
  ASSERT_TRUE(dir.ok());
  const fs::path venv = fs::absolute(dir->path()) / "venv";
  auto made = run_plain([&] {
    ProcessOptions p;
    p.argv = {"python3", "-m", "venv", "--without-pip", venv.string()};
    p.deadline = milliseconds(60000);
    return p;
  }());
  if (!made.succeeded()) GTEST_SKIP() << "python3 -m venv unavailable here: " << made.stderr_text;
  auto site = run_plain([&] {
    ProcessOptions p;
    p.argv = {(venv / "bin/python3").string(), "-c", "import site; print(site.getsitepackages()[0])"};
    return p;
  }());
  ASSERT_TRUE(site.succeeded()) << site.stderr_text;
  const fs::path packages = site.stdout_text.substr(0, site.stdout_text.find('\n'));
  ASSERT_TRUE(write_file_atomic(packages / "mooreeval_venv_marker.py", "WHERE = 'venv'\n").ok());
  SandboxOptions o;
  o.python = (venv / "bin/python3").string();
  auto sb = make_sandbox(o);
  REQUIRE_SANDBOX(sb);
  EXPECT_EQ(sb->python_executable(), o.python);
  auto job = Job::make();
  auto jail = sb->for_job();
  ASSERT_TRUE(jail.ok());
  ProcessOptions p;
  p.argv = {o.python, "-c", "import mooreeval_venv_marker as m; print(m.WHERE)"};
  auto r = run_in(*jail, job, p);
  EXPECT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "venv\n");
}

}  // namespace
}  // namespace musacoder::sandbox

namespace musacoder::sandbox {
namespace {

TEST(SandboxUids, ConcurrentJobsNeverShareAUidEvenAcrossSandboxInstances) {
  if (::geteuid() != 0) GTEST_SKIP() << "per-job uids need root";
  Sandbox* a = default_sandbox();
  REQUIRE_SANDBOX(a);
  auto b = make_sandbox();
  REQUIRE_SANDBOX(b);
  std::set<uid_t> seen;
  std::vector<JobSandbox> held;
  for (int i = 0; i < 6; ++i) {
    auto j = (i % 2 ? b.get() : a)->for_job();
    ASSERT_TRUE(j.ok()) << j.status().to_string();
    EXPECT_TRUE(seen.insert(j->uid()).second) << "uid " << j->uid() << " leased twice";
    held.push_back(std::move(j).value());
  }
  uid_t first = held.front().uid();
  held.erase(held.begin());  // released: leasable again
  bool reused = false;
  for (int i = 0; i < 2000 && !reused; ++i) {
    auto j = a->for_job();
    ASSERT_TRUE(j.ok());
    reused = j->uid() == first;
  }
  EXPECT_TRUE(reused) << "a released uid never came back";
}

}  // namespace
}  // namespace musacoder::sandbox
