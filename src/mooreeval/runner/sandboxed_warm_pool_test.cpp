// The sandboxed warm runners (eval/sandboxed_warm_pool.h) with real sandboxes and zygotes:
// a job leaves processes (setsid'ed), files in /tmp, /dev/shm and its work dir, and a SysV
// segment; the next job of the same member must find none of them, nor see a host canary.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "mooreeval/legality/legality.h"
#include "mooreeval/runner/sandboxed_warm_pool.h"
#include "mooreeval/runner/runner.h"
#include "sandbox/sandbox.h"

namespace musacoder::eval {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = fs::path(MUSACODER_SOURCE_DIR) / "tests/fixtures/warm_pool";
// Any candidate that passes the static rules: the inspect mode then imports the task.
const fs::path kCandidate = fs::path(MUSACODER_SOURCE_DIR) / "solutions/cpu/activation/gelu.py";

struct PoolFixture : ::testing::Test {
  static std::unique_ptr<sandbox::Sandbox> sandbox_;
  static std::unique_ptr<SandboxedWarmPool> pool_;
  static std::optional<TempDir> root_;

  static void SetUpTestSuite() {
    sandbox::SandboxOptions so;
    so.mode = sandbox::SandboxMode::kAuto;
    auto sb = sandbox::Sandbox::create(so);
    if (!sb.ok() || !(*sb)->active()) return;
    sandbox_ = std::move(sb).value();
    auto root = TempDir::create("mooreeval-warm-pool-test-");
    ASSERT_TRUE(root.ok());
    root_.emplace(std::move(root).value());
    WarmPoolOptions o;
    o.runner.runner_dir = fs::path(MUSACODER_SOURCE_DIR) / "python";
    o.sandbox = sandbox_.get();
    o.job = {sandbox::JobKind::kRunCpu, {}, {o.runner.runner_dir}, 0, true};
    o.size = 1;  // every job lands in the same member
    o.root = root_->path();
    pool_ = SandboxedWarmPool::start(o);
  }
  static void TearDownTestSuite() {
    pool_.reset();
    sandbox_.reset();
    root_.reset();
  }
  void SetUp() override {
    if (!sandbox_) GTEST_SKIP() << "no sandbox on this machine (bubblewrap missing or refused)";
    ASSERT_EQ(pool_->members(), 1) << pool_->note();
  }

  // Runs the inspect mode in a member with `task` as the task file; returns the lease
  // (the job dir stays readable until it ends) and the outcome.
  static std::pair<SandboxedWarmPool::Lease, run::RunnerOutcome> inspect(
      const std::string& task, std::map<std::string, std::string> env = {},
      std::chrono::milliseconds deadline = std::chrono::seconds(60)) {
    auto lease = pool_->acquire();
    EXPECT_TRUE(lease.has_value());
    auto cand = lease->stage(kCandidate, "candidate.py");
    auto task_copy = lease->stage(kFixtures / task, "task.py");
    EXPECT_TRUE(cand.ok() && task_copy.ok());
    json job = {{"candidate_path", cand->string()},
                {"task_path", task_copy->string()},
                {"allowed_torch_ops", legality::LegalityOptions::default_allowed_ops()}};
    auto out =
        run::run_runner(lease->runner_options(), {"inspect", job, lease->job_dir(), deadline, env, {}});
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return {std::move(*lease), out.ok() ? std::move(out).value() : run::RunnerOutcome{}};
  }

  static json observe(const fs::path& canary) {
    auto [lease, out] = inspect("observer_task.py", {{"WARM_POOL_CANARY", canary.string()}});
    EXPECT_TRUE(out.result.has_value()) << out.error << "\n" << out.process.stderr_text;
    auto text = read_file(lease.job_dir() / "seen.json");
    EXPECT_TRUE(text.ok()) << "the observer job wrote nothing: "
                           << (out.result ? out.result->dump() : out.error) << "\n"
                           << out.process.stderr_text;
    return text.ok() ? json::parse(*text) : json();
  }

  static void expect_clean(const json& seen) {
    ASSERT_TRUE(seen.is_object());
    EXPECT_TRUE(seen["others"].empty()) << "processes left by the previous job: " << seen["others"].dump();
    for (const auto& name : seen["tmp"]) {
      EXPECT_NE(name, "leak.txt");
      EXPECT_NE(name, "leak_dir");
    }
    for (const auto& name : seen["shm"]) EXPECT_NE(name, "leak.txt");
    for (const auto& name : seen["cwd"]) EXPECT_NE(name, "leak.txt");
    EXPECT_TRUE(seen["sysv"].empty()) << "SysV segments left: " << seen["sysv"].dump();
    EXPECT_TRUE(seen["canary"].get<std::string>().starts_with("denied")) << seen["canary"];
  }
};

std::unique_ptr<sandbox::Sandbox> PoolFixture::sandbox_;
std::unique_ptr<SandboxedWarmPool> PoolFixture::pool_;
std::optional<TempDir> PoolFixture::root_;

fs::path write_canary() {
  static auto dir = TempDir::create("mooreeval-warm-canary-");
  const fs::path canary = fs::absolute(dir->path()) / "canary.txt";
  EXPECT_TRUE(write_file_atomic(canary, "CANARY-warm-pool host secret\n").ok());
  return canary;
}

TEST_F(PoolFixture, NothingOfAFinishedJobReachesTheNext) {
  {
    auto [lease, out] = inspect("leaky_task.py");
    ASSERT_TRUE(out.result.has_value()) << out.error << "\n" << out.process.stderr_text;
    EXPECT_EQ(out.result->value("status", ""), "ok") << out.result->dump();
    EXPECT_TRUE(out.result->value("executed", false)) << out.result->dump();
    // Control: the leaks are really there while the job's lease is held.
    EXPECT_TRUE(fs::exists(lease.job_dir() / "leak.txt"));
  }
  expect_clean(observe(write_canary()));
}

TEST_F(PoolFixture, NothingOfAKilledJobReachesTheNext) {
  {
    auto [lease, out] = inspect("leaky_task.py", {{"LEAKY_TASK_HANG", "1"}}, std::chrono::seconds(8));
    EXPECT_TRUE(out.process.timed_out) << out.process.describe();
  }
  expect_clean(observe(write_canary()));
}

TEST_F(PoolFixture, TheObserverSeesItsOwnLeaks) {
  // Control for expect_clean: in one job, the observer does see what that job left.
  auto lease = pool_->acquire();
  ASSERT_TRUE(lease.has_value());
  auto cand = lease->stage(kCandidate, "candidate.py");
  auto leaky = lease->stage(kFixtures / "leaky_task.py", "leaky.py");
  auto observer = lease->stage(kFixtures / "observer_task.py", "observer.py");
  ASSERT_TRUE(cand.ok() && leaky.ok() && observer.ok());
  // One job importing both: the leaky task first (as the task), then the observer (as
  // the candidate's neighbour would): the observer's view must show the leaks.
  const fs::path both = lease->job_dir() / "in" / "both.py";
  ASSERT_TRUE(write_file_atomic(both, "exec(open(" + json(leaky->string()).dump() + ").read())\nexec(open(" +
                                          json(observer->string()).dump() + ").read())\n")
                  .ok());
  json job = {{"candidate_path", cand->string()},
              {"task_path", both.string()},
              {"allowed_torch_ops", legality::LegalityOptions::default_allowed_ops()}};
  auto out = run::run_runner(lease->runner_options(), {"inspect",
                                                       job,
                                                       lease->job_dir(),
                                                       std::chrono::seconds(60),
                                                       {{"WARM_POOL_CANARY", write_canary().string()}},
                                                       {}});
  ASSERT_TRUE(out.ok());
  auto text = read_file(lease->job_dir() / "seen.json");
  ASSERT_TRUE(text.ok()) << out->process.stderr_text;
  json seen = json::parse(*text);
  EXPECT_FALSE(seen["others"].empty());
  EXPECT_NE(std::find(seen["tmp"].begin(), seen["tmp"].end(), "leak.txt"), seen["tmp"].end());
  EXPECT_FALSE(seen["sysv"].empty());
}

}  // namespace
}  // namespace musacoder::eval
