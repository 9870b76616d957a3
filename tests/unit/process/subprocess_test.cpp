#include "process/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <thread>

namespace musacoder {
namespace {

ProcessResult run_sh(const std::string& script, int deadline_ms = 5000, std::size_t cap = 1 << 20) {
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.deadline = std::chrono::milliseconds(deadline_ms);
  o.max_output_bytes = cap;
  auto r = run_process(o);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : ProcessResult{};
}

TEST(Subprocess, CapturesOutputAndExitCode) {
  auto r = run_sh("echo out; echo err >&2; exit 3");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.succeeded());
  EXPECT_EQ(r.stdout_text, "out\n");
  EXPECT_EQ(r.stderr_text, "err\n");
}

TEST(Subprocess, ReportsSignals) {
  auto r = run_sh("kill -SEGV $$");
  EXPECT_TRUE(r.signaled);
  EXPECT_EQ(r.term_signal, SIGSEGV);
  EXPECT_NE(r.describe().find("SEGV"), std::string::npos);
}

TEST(Subprocess, DeadlineKillsTheWholeGroup) {
  // The grandchild holds stdout open; the deadline kill must reach it too.
  auto r = run_sh("sleep 30 & sleep 30", 300);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.wall_seconds, 5.0);
}

TEST(Subprocess, SetDeadlineMovesItFromNow) {
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c", "sleep 0.6; exit 4"};
  o.deadline = std::chrono::milliseconds(200);
  auto later = Subprocess::spawn(o);
  ASSERT_TRUE(later.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past the first deadline, unseen
  (*later)->set_deadline(std::chrono::seconds(10));
  auto r = (*later)->wait();
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 4);

  o.argv = {"/bin/sh", "-c", "sleep 30"};
  o.deadline = std::chrono::seconds(60);
  auto sooner = Subprocess::spawn(o);
  ASSERT_TRUE(sooner.ok());
  (*sooner)->set_deadline(std::chrono::milliseconds(200));
  r = (*sooner)->wait();
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.wall_seconds, 5.0);
}

TEST(Subprocess, CapsOutput) {
  auto r = run_sh("head -c 100000 /dev/zero", 5000, 1000);
  EXPECT_EQ(r.stdout_text.size(), 1000u);
  EXPECT_TRUE(r.output_truncated);
  EXPECT_EQ(r.exit_code, 0);
}

TEST(Subprocess, MissingProgramIsNotFound) {
  ProcessOptions o;
  o.argv = {"/nonexistent/program"};
  auto r = run_process(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(Subprocess, ControlPipeDialogue) {
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c", "echo ready >&3; read word; echo got:$word"};
  o.keep_stdin_open = true;
  auto child = Subprocess::spawn(o);
  ASSERT_TRUE(child.ok());
  auto line = (*child)->read_control_line();
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(*line, "ready");
  (*child)->send_stdin("go\n", true);
  auto r = (*child)->wait();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_text, "got:go\n");
}

TEST(Subprocess, ControlLineIsNulloptWhenChildExits) {
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c", "exit 0"};
  auto child = Subprocess::spawn(o);
  ASSERT_TRUE(child.ok());
  EXPECT_FALSE((*child)->read_control_line().has_value());
}

}  // namespace
}  // namespace musacoder

namespace musacoder {
namespace {

TEST(SubprocessSandboxHooks, ClearEnvPassesOnlyEnvSet) {
  ::setenv("MC_SUBPROCESS_TEST_INHERITED", "leak", 1);
  ProcessOptions o;
  o.argv = {"/usr/bin/env"};
  o.clear_env = true;
  o.env_set = {{"ONLY", "this"}};
  auto r = run_process(o);
  ::unsetenv("MC_SUBPROCESS_TEST_INHERITED");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text, "ONLY=this\n");
}

TEST(SubprocessSandboxHooks, InheritedFdsStayOpenOthersAreClosed) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  int kept = ::fcntl(p[1], F_DUPFD_CLOEXEC, 20);
  ProcessOptions o;
  o.argv = {"/bin/bash", "-c",  // bash: dash takes single-digit fds only
            "echo via-kept >&" + std::to_string(kept) + " && echo via-other >&" + std::to_string(p[1])};
  o.inherit_fds = {kept};
  auto r = run_process(o);
  ::close(kept);
  ::close(p[1]);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->succeeded());  // the second fd was close-on-exec
  char buf[64] = {};
  ssize_t n = ::read(p[0], buf, sizeof buf - 1);
  ::close(p[0]);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "via-kept\n");
}

TEST(SubprocessSandboxHooks, LowInheritedFdsAreRejected) {
  ProcessOptions o;
  o.argv = {"/bin/true"};
  o.inherit_fds = {3};
  EXPECT_FALSE(run_process(o).ok());
}

TEST(SubprocessSandboxHooks, ChildSetupRunsBeforeExecAndItsErrorFailsTheSpawn) {
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c", "ulimit -c"};
  o.child_setup = [] {
    rlimit r{0, 0};
    return ::setrlimit(RLIMIT_CORE, &r) == 0 ? 0 : errno;
  };
  auto r = run_process(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text, "0\n");
  o.child_setup = [] { return EPERM; };
  auto failed = run_process(o);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("Operation not permitted"), std::string::npos);
}

TEST(SubprocessSandboxHooks, KeepAliveLivesAsLongAsTheProcess) {
  auto token = std::make_shared<int>(7);
  std::weak_ptr<int> watch = token;
  ProcessOptions o;
  o.argv = {"/bin/true"};
  o.keep_alive = std::move(token);
  auto child = Subprocess::spawn(o);
  ASSERT_TRUE(child.ok());
  o.keep_alive.reset();
  EXPECT_FALSE(watch.expired());
  (*child)->wait();
  child = Result<std::unique_ptr<Subprocess>>(internal_error("released"));
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace musacoder
