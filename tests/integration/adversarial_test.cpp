// The adversarial corpus on the cpu backend: every case gets its expected verdict (and, when
// illegal, the expected rule), no host file line reaches the verdict, no canary file is
// written, and right after each case a legitimate candidate still scores ok.
#include "support/adversarial.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "process/subprocess.h"

namespace musacoder::testing {
namespace {

mooreeval::Options adversarial_options() {
  auto o = test_options("cpu");
  o.timing.benchmark_iters = 5;
  o.timing.warmup_iters = 2;
  return o;
}

// Each created on first use and kept for the process (the Corpus group shares them).
const TestEvaluator& cpu_evaluator() {
  static const TestEvaluator ev = make_evaluator(adversarial_options());
  return ev;
}

// Only the stages before the build (check.static_only): for the cases that must never be
// built or run without the per-job sandbox, in a build that has none.
const TestEvaluator& static_only_evaluator() {
  static const TestEvaluator ev = make_evaluator([] {
    auto o = adversarial_options();
    o.check.static_only = true;
    return o;
  }());
  return ev;
}

const TestEvaluator& short_deadline_evaluator() {
  static const TestEvaluator ev = make_evaluator(short_deadline_options("cpu"));
  return ev;
}

const std::filesystem::path kCanaries[] = {"/tmp/mooreeval-adversarial-canary-py",
                                           "/tmp/mooreeval-adversarial-canary-cpp"};

class CpuAdversarial : public ::testing::TestWithParam<AdversarialCase> {};

TEST_P(CpuAdversarial, GetsItsVerdictAndTheNextCandidateStillScoresOk) {
  const auto& c = GetParam();
  for (const auto& p : kCanaries) std::filesystem::remove(p);
  const auto file = kSourceDir / "tests/adversarial" / c.file;
  // Without the sandbox, only the stages before the build: the candidate is never compiled or run here.
  const TestEvaluator& ev = c.needs_sandbox && !sandbox_present() ? static_only_evaluator()
                            : c.expected == "timeout"             ? short_deadline_evaluator()
                                                                  : cpu_evaluator();
  ASSERT_TRUE(ev) << ev.why;
  const mooreeval::Verdict v = evaluate_file(*ev, c.task, file);
  EXPECT_EQ(mooreeval::verdict_name(v.verdict), c.expected) << c.file << ": " << v.message << "\n" << v.log;
  if (!c.rule.empty()) {
    EXPECT_TRUE(has_rule(v, c.rule)) << c.file << ": expected rule " << c.rule << ", got " << v.message;
  }
  if (c.expected != "ok") {
    EXPECT_LT(v.reward.total, 0.6) << c.file;
  }
  EXPECT_EQ(leaked_secret(v), "") << c.file << " leaked a host file line into its verdict";
  for (const auto& p : kCanaries) EXPECT_FALSE(std::filesystem::exists(p)) << c.file << " wrote " << p;

  ASSERT_TRUE(cpu_evaluator()) << cpu_evaluator().why;
  auto next = evaluate_file(*cpu_evaluator(), "elementwise/add",
                            kSourceDir / "tests/fixtures/candidates/correct_cpu.py");
  EXPECT_EQ(mooreeval::verdict_name(next.verdict), std::string("ok"))
      << "after " << c.file << ": " << next.message << "\n"
      << next.log;

  if (c.needs_sandbox && !sandbox_present())
    GTEST_SKIP() << c.file << ": the full run needs the per-job sandbox, which is not in this build; "
                 << "only the static screen ran (verdict " << mooreeval::verdict_name(v.verdict) << ")";
}

INSTANTIATE_TEST_SUITE_P(Corpus, CpuAdversarial, ::testing::ValuesIn(adversarial_cases("cpu")),
                         [](const auto& info) { return param_name(info.param.file); });

TEST(AdversarialCorpus, HasAtLeastTwentyCasesWithReasons) {
  auto text = read_file(kSourceDir / "tests/adversarial/manifest.json");
  ASSERT_TRUE(text.ok());
  auto manifest = nlohmann::json::parse(*text);
  EXPECT_GE(manifest.size(), 20u);
  for (const auto& m : manifest) {
    EXPECT_TRUE(std::filesystem::exists(kSourceDir / "tests/adversarial" / m.value("file", ""))) << m.dump();
    EXPECT_FALSE(m.value("why", "").empty()) << m.dump();
    EXPECT_FALSE(m.value("backends", std::vector<std::string>{}).empty()) << m.dump();
    if (m.value("expected", "") == "illegal") {
      EXPECT_FALSE(m.value("rule", "").empty()) << m.dump();
    }
  }
}

// check.static_only, which the corpus uses for the cases that need the sandbox where the build
// has none, stops after the static rules: a candidate they reject gets the verdict a full evaluation
// gives it, one they pass is "ok at stage legality", and neither is built. Shown as the corpus runs it
// there: no sandbox (and no warm runners, the cheapest start).
TEST(StaticOnly, StopsAfterTheStaticRulesAndBuildsNothing) {
  auto o = adversarial_options();
  o.check.static_only = true;
  o.sandbox.mode = sandbox::SandboxMode::kOff;
  o.runner.warm_runners = false;
  auto ev = make_evaluator(o);
  ASSERT_TRUE(ev) << ev.why;
  auto bomb = evaluate_file(*ev, "elementwise/add", kSourceDir / "tests/adversarial/fork_bomb_cpu.py");
  EXPECT_EQ(mooreeval::verdict_name(bomb.verdict), std::string("illegal")) << bomb.message << "\n"
                                                                           << bomb.log;
  EXPECT_TRUE(has_rule(bomb, "process_access")) << bomb.message;
  EXPECT_FALSE(bomb.compiled);
  auto good = evaluate_file(*ev, "elementwise/add", kSourceDir / "tests/fixtures/candidates/correct_cpu.py");
  EXPECT_EQ(mooreeval::verdict_name(good.verdict), std::string("ok")) << good.message << "\n" << good.log;
  EXPECT_EQ(mooreeval::stage_name(good.stage), std::string("legality"));
  EXPECT_EQ(good.message, "passed the static checks (not built, not run)");
  EXPECT_FALSE(good.compiled);
  EXPECT_FALSE(good.reference_time.has_value());
}

// --forbid-fallback-code keeps the strict static rules: a try/except and torch compute in a
// conditional block of forward are illegal before anything is built or run.
TEST(ForbidFallbackCode, KeepsTheStaticRules) {
  auto o = adversarial_options();
  o.legality.forbid_fallback_code = true;
  auto ev = make_evaluator(o);
  ASSERT_TRUE(ev) << ev.why;
  auto v = evaluate_file(*ev, "elementwise/add", kSourceDir / "tests/adversarial/try_fallback_cpu.py");
  EXPECT_EQ(mooreeval::verdict_name(v.verdict), std::string("illegal")) << v.message;
  EXPECT_TRUE(has_rule(v, "try_fallback")) << v.message;
  EXPECT_TRUE(has_rule(v, "torch_compute_in_forward")) << v.message;
  EXPECT_FALSE(v.compiled);
}

// A speedup above the threshold is re-measured with the second method; the verdict keeps
// the smaller one and records both.
TEST(SpeedupRecheck, AboveTheThresholdBothMethodsAreRecorded) {
  auto o = adversarial_options();
  o.legality.recheck_speedup_above = 1e-9;  // any measured speedup, however slow the machine, triggers it
  auto ev = make_evaluator(o);
  ASSERT_TRUE(ev) << ev.why;
  auto v = evaluate_file(*ev, "elementwise/add", kSourceDir / "tests/fixtures/candidates/correct_cpu.py");
  ASSERT_EQ(mooreeval::verdict_name(v.verdict), std::string("ok")) << v.message << "\n" << v.log;
  ASSERT_TRUE(v.speedup_check.has_value())
      << "no re-check recorded; verdict: " << mooreeval::to_json(v).dump(1);
  EXPECT_EQ(v.speedup_check->method, "wall_clock_batch");
  EXPECT_GT(v.speedup_check->reference_ms, 0);
  EXPECT_GT(v.speedup_check->candidate_ms, 0);
  ASSERT_TRUE(v.speedup.has_value());
  EXPECT_DOUBLE_EQ(*v.speedup, std::min(v.speedup_check->event_speedup, v.speedup_check->recheck_speedup));
  EXPECT_FALSE(mooreeval::to_json(v)["speedup_check"].is_null());
}

// The busy-thread probe on an oversubscribed machine (CI runs tests side by side on two
// cores): a spinning thread gets only a slice of a core there, but it is runnable the whole
// time, and the probe counts that; a thread that sleeps is not counted.
TEST(BusyThreadProbe, SeesASpinnerWhenEveryCoreIsTaken) {
  std::vector<pid_t> hogs;
  const unsigned n = 3 * std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < n; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
      volatile unsigned long x = 0;
      for (;;) {
        x = x + 1;
      }
    }
    hogs.push_back(pid);
  }
  ProcessOptions p;
  p.argv = {"python3", "-c", R"(
import json, threading, time
from mooreeval_runner.guards import busy_native_threads
stop = False
def spin():
    while not stop:
        pass
def nap():
    time.sleep(5)
spinner = threading.Thread(target=spin, daemon=True)
sleeper = threading.Thread(target=nap, daemon=True)
spinner.start(); sleeper.start()
busy = dict(busy_native_threads())
print(json.dumps({"spinner": spinner.native_id in busy, "sleeper": sleeper.native_id in busy, "busy": list(busy.items())}))
stop = True
)"};
  p.env_set = {{"PYTHONPATH", (kSourceDir / "python").string()}};
  p.deadline = std::chrono::seconds(60);
  auto r = run_process(p);
  for (pid_t pid : hogs) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->succeeded()) << r->describe() << "\n" << r->stderr_text;
  auto seen = nlohmann::json::parse(r->stdout_text);
  EXPECT_TRUE(seen["spinner"].get<bool>()) << r->stdout_text;
  EXPECT_FALSE(seen["sleeper"].get<bool>()) << r->stdout_text;
}

}  // namespace
}  // namespace musacoder::testing
