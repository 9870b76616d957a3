// The resident reference runners (eval/resident_references.h) with real servers on the cpu
// device: reference jobs run one after another in one server and write what a fresh runner
// process writes for the same seeds; other modes are refused; a job past its deadline ends
// its server, and the next acquire() replaces it.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "mooreeval/runner/resident_references.h"
#include "mooreeval/runner/runner.h"

namespace musacoder::eval {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

const fs::path kSource = MUSACODER_SOURCE_DIR;

run::RunnerOptions runner() {
  run::RunnerOptions r;
  r.runner_dir = kSource / "python";
  return r;
}

json reference_job(const fs::path& dir, uint64_t seed) {
  return {{"task_path", (kSource / "tasks/elementwise/add.py").string()},
          {"device", "cpu"},
          {"trial_seeds", {seed, seed + 1, seed + 2}},
          {"init_seed", seed + 3},
          {"warmup_iters", 1},
          {"benchmark_iters", 2},
          {"control_fd", 3},
          {"check_seeds", {seed + 4, seed + 5, seed + 6}},
          {"outputs_path", (dir / "reference.bin").string()},
          {"checks_path", (dir / "reference_checks.bin").string()},
          {"timing_path", (dir / "reference_timing.json").string()},
          {"recheck_path", (dir / "reference_recheck.json").string()}};
}

struct Ran {
  run::RunnerOutcome outcome;
  std::string outputs;  // reference.bin's bytes, then each trial's file (reference.bin.<t>)
};

// The header names the trial count; the tensors live in one file per trial.
std::string read_outputs(const fs::path& dir) {
  std::string all;
  if (auto header = read_file(dir / "reference.bin", 1 << 10); header.ok()) all = *header;
  for (int t = 0;; ++t) {
    auto bytes = read_file(dir / ("reference.bin." + std::to_string(t)), 64 << 20);
    if (!bytes.ok()) break;
    all += *bytes;
  }
  return all;
}

// The reference dialogue up to its outputs, then "exit".
Ran run_reference(const run::RunnerOptions& r, uint64_t seed) {
  auto dir = TempDir::create("mooreeval-resident-test-");
  EXPECT_TRUE(dir.ok());
  auto session =
      run::RunnerSession::start(r, {"reference", reference_job(dir->path(), seed), dir->path(), 60s});
  EXPECT_TRUE(session.ok()) << session.status().to_string();
  if (!session.ok()) return {};
  run::RunnerSession& s = **session;
  EXPECT_TRUE(s.wait_for("loaded"));
  s.command("run");
  EXPECT_TRUE(s.wait_for("outputs_ready"));
  s.command("exit");
  Ran ran{s.finish(), ""};
  ran.outputs = read_outputs(dir->path());
  return ran;
}

struct ResidentFixture : ::testing::Test {
  static std::unique_ptr<ResidentReferences> pool_;
  static void SetUpTestSuite() {
    ResidentReferenceOptions o;
    o.runner = runner();
    o.device = "cpu";
    o.size = 1;  // every job lands in the same server
    pool_ = ResidentReferences::start(o);
  }
  static void TearDownTestSuite() { pool_.reset(); }
  void SetUp() override { ASSERT_EQ(pool_->members(), 1) << pool_->note(); }
};

std::unique_ptr<ResidentReferences> ResidentFixture::pool_;

TEST_F(ResidentFixture, JobsInOneServerWriteWhatAFreshProcessWrites) {
  const Ran fresh = run_reference(runner(), 1000);
  ASSERT_TRUE(fresh.outcome.result.has_value()) << fresh.outcome.error;
  ASSERT_GT(fresh.outputs.size(), 12u) << "no trial files beside the header";
  for (uint64_t seed : {1000u, 2000u, 1000u}) {
    auto lease = pool_->acquire();
    ASSERT_TRUE(lease.has_value());
    const Ran resident = run_reference(lease->runner_options(), seed);
    ASSERT_TRUE(resident.outcome.result.has_value()) << resident.outcome.error << "\n"
                                                     << resident.outcome.process.stderr_text;
    EXPECT_EQ(resident.outcome.result->value("status", ""), "ok") << resident.outcome.result->dump();
    EXPECT_TRUE(resident.outcome.process.succeeded()) << resident.outcome.process.describe();
    // Same seeds, same bytes; other seeds, other bytes (the check can fail).
    if (seed == 1000u)
      EXPECT_EQ(resident.outputs, fresh.outputs);
    else
      EXPECT_NE(resident.outputs, fresh.outputs);
  }
}

TEST_F(ResidentFixture, ModesOtherThanReferenceAreRefused) {
  auto lease = pool_->acquire();
  ASSERT_TRUE(lease.has_value());
  auto dir = TempDir::create("mooreeval-resident-test-");
  ASSERT_TRUE(dir.ok());
  json job = {{"candidate_path", (kSource / "solutions/cpu/elementwise/add.py").string()},
              {"task_path", (kSource / "tasks/elementwise/add.py").string()}};
  auto out = run::run_runner(lease->runner_options(), {"inspect", job, dir->path(), 30s});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(out->process.exit_code, 86) << out->process.describe();
  EXPECT_NE(out->process.stderr_text.find("reference jobs only"), std::string::npos)
      << out->process.stderr_text;
  EXPECT_FALSE(out->result.has_value());
}

TEST_F(ResidentFixture, AJobPastItsDeadlineEndsItsServerAndTheNextAcquireReplacesIt) {
  {
    auto lease = pool_->acquire();
    ASSERT_TRUE(lease.has_value());
    auto dir = TempDir::create("mooreeval-resident-test-");
    ASSERT_TRUE(dir.ok());
    auto session = run::RunnerSession::start(lease->runner_options(),
                                             {"reference", reference_job(dir->path(), 7), dir->path(), 60s});
    ASSERT_TRUE(session.ok());
    ASSERT_TRUE((*session)->wait_for("loaded"));
    (*session)->set_deadline(200ms);  // never told "run": it waits at its gate until killed
    const auto out = (*session)->finish();
    // finish() closes stdin, which the gate reads as "exit": a job that obeys ends in time.
    EXPECT_FALSE(out.process.timed_out) << out.process.describe();
  }
  {
    // A job that ignores its deadline: killed, and its server with it.
    auto lease = pool_->acquire();
    ASSERT_TRUE(lease.has_value());
    auto dir = TempDir::create("mooreeval-resident-test-");
    ASSERT_TRUE(dir.ok());
    json job = reference_job(dir->path(), 7);
    job["task_path"] = (kSource / "tests/fixtures/resident/slow_task.py").string();
    auto session =
        run::RunnerSession::start(lease->runner_options(), {"reference", job, dir->path(), 1500ms});
    ASSERT_TRUE(session.ok());
    const auto out = (*session)->finish();
    EXPECT_TRUE(out.process.timed_out) << out.process.describe();
  }
  auto lease = pool_->acquire();  // the dead server is replaced here
  ASSERT_TRUE(lease.has_value()) << pool_->note();
  const Ran after = run_reference(lease->runner_options(), 1000);
  ASSERT_TRUE(after.outcome.result.has_value()) << after.outcome.error;
  EXPECT_EQ(after.outcome.result->value("status", ""), "ok");
  EXPECT_EQ(pool_->members(), 1);
}

}  // namespace
}  // namespace musacoder::eval
