// End-to-end on the cpu backend: real runner processes, real torch, real g++.
#include <gtest/gtest.h>

#include "mooreeval/pipeline/batch.h"
#include "support/eval_env.h"

namespace musacoder::testing {
namespace {

eval::Evaluator& cpu_evaluator() {
  static eval::Evaluator ev(test_options(build::Backend::kCpu));
  return ev;
}

eval::Evaluator& short_deadline_evaluator() {
  static eval::Evaluator ev(short_deadline_options(build::Backend::kCpu));
  return ev;
}

class CpuSolution : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuSolution, ScoresOkWithRewardAtLeast06) {
  auto v = evaluate_file(cpu_evaluator(), GetParam(), kSourceDir / "solutions/cpu" / (GetParam() + ".py"));
  EXPECT_EQ(eval::verdict_name(v.verdict), std::string("ok")) << v.message << "\n" << v.log;
  EXPECT_GE(v.reward.total, 0.6);
  EXPECT_EQ(v.passed, v.trials);
  EXPECT_TRUE(v.speedup.has_value());
  EXPECT_TRUE(v.reference_time.has_value());
  EXPECT_EQ(v.build_path, "lean") << "every bundled solution compiles against the lean headers\n" << v.log;
}

INSTANTIATE_TEST_SUITE_P(Bundled, CpuSolution, ::testing::ValuesIn(bundled_task_ids()),
                         [](const auto& info) { return param_name(info.param); });

class CpuBroken : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(CpuBroken, GetsItsVerdictClass) {
  const auto& c = GetParam();
  auto& ev = c.expected == "timeout" ? short_deadline_evaluator() : cpu_evaluator();
  auto v = evaluate_file(ev, c.task, kSourceDir / "tests/fixtures/candidates" / c.file);
  EXPECT_EQ(eval::verdict_name(v.verdict), c.expected) << c.file << ": " << v.message << "\n" << v.log;
  if (c.expected != "ok") {
    EXPECT_LT(v.reward.total, 0.6) << c.file;
  }
  if (c.expected == "illegal") {
    EXPECT_DOUBLE_EQ(v.reward.total, 0.0) << c.file << ": a hack earns nothing";
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, CpuBroken, ::testing::ValuesIn(broken_cases("cpu")),
                         [](const auto& info) { return param_name(info.param.file); });

// A crash or a hang of one candidate must not change the verdict of the next ones.
TEST(Isolation, CrashAndTimeoutDoNotAffectNeighbours) {
  auto options = test_options(build::Backend::kCpu);
  options.max_run = std::chrono::seconds(45);
  eval::Evaluator ev(options);
  auto task = task::resolve_task("elementwise/add", kSourceDir / "tasks");
  ASSERT_TRUE(task.ok());
  const auto dir = kSourceDir / "tests/fixtures/candidates";
  std::vector<eval::BatchJob> jobs = {
      {*task, dir / "segfault_cpu.py", "segfault"},    {*task, dir / "correct_cpu.py", "after-segfault"},
      {*task, dir / "infinite_loop_cpu.py", "loop"},   {*task, dir / "correct_cpu.py", "after-loop"},
      {*task, dir / "raises_in_forward.py", "raises"}, {*task, dir / "correct_cpu.py", "after-raise"},
  };
  auto verdicts = eval::run_batch(ev, jobs, 2);
  ASSERT_EQ(verdicts.size(), jobs.size());
  EXPECT_EQ(verdicts[0].verdict, eval::VerdictClass::kRuntimeError) << verdicts[0].message;
  EXPECT_EQ(verdicts[2].verdict, eval::VerdictClass::kTimeout) << verdicts[2].message;
  EXPECT_EQ(verdicts[4].verdict, eval::VerdictClass::kRuntimeError) << verdicts[4].message;
  for (int i : {1, 3, 5})
    EXPECT_EQ(verdicts[i].verdict, eval::VerdictClass::kOk) << jobs[i].label << ": " << verdicts[i].message;
}

// Candidate runners start before their run slot (prestart_runners) and wait at their gate;
// their deadline counts from the slot. Three candidates that each hold the one slot ~8 s:
// the last waits longer than --max-run-seconds and must still score ok.
TEST(RunSlots, ARunnerStartedAheadGetsItsDeadlineFromTheSlot) {
  auto options = test_options(build::Backend::kCpu);
  options.max_run = std::chrono::seconds(12);
  options.run_slots = 1;
  options.prestart_runners = 2;
  eval::Evaluator ev(options);
  ASSERT_TRUE(ev.prepare().ok());
  auto task = task::resolve_task("elementwise/add", kSourceDir / "tasks");
  ASSERT_TRUE(task.ok());
  const auto file = kSourceDir / "tests/fixtures/candidates/slow_init_cpu.py";
  std::vector<eval::BatchJob> jobs = {
      {*task, file, "first"}, {*task, file, "second"}, {*task, file, "third"}};
  auto verdicts = eval::run_batch(ev, jobs, 3);
  ASSERT_EQ(verdicts.size(), jobs.size());
  double longest_wait = 0;
  for (const auto& v : verdicts) {
    EXPECT_EQ(v.verdict, eval::VerdictClass::kOk) << v.message << "\n" << v.log;
    longest_wait = std::max(longest_wait, v.seconds.run_wait);
    // Each side reports where its time went; the candidate's setup happened before its slot.
    ASSERT_TRUE(v.seconds.runners.contains("candidate")) << v.seconds.runners.dump();
    ASSERT_TRUE(v.seconds.runners.contains("reference")) << v.seconds.runners.dump();
    EXPECT_GE(v.seconds.runners["candidate"].value("load", 0.0), 6.5) << v.seconds.runners.dump();
    EXPECT_TRUE(v.seconds.runners["candidate"].contains("setup"));
    EXPECT_TRUE(v.seconds.runners["candidate"].contains("waiting"));
  }
  // The scenario happened: someone waited for the slot longer than its run deadline.
  EXPECT_GT(longest_wait, 12.0);
}

// Several run slots: the untimed work of different evaluations shares the device, their
// benchmarks take it one at a time (eval/timing_lock.h); every evaluation completes.
TEST(RunSlots, SeveralSlotsTimeOneAtATime) {
  auto options = test_options(build::Backend::kCpu);
  options.run_slots = 3;
  eval::Evaluator ev(options);
  ASSERT_TRUE(ev.prepare().ok());
  auto task = task::resolve_task("elementwise/add", kSourceDir / "tasks");
  ASSERT_TRUE(task.ok());
  const auto file = kSourceDir / "tests/fixtures/candidates/correct_cpu.py";
  std::vector<eval::BatchJob> jobs;
  for (const char* id : {"a", "b", "c", "d"}) jobs.push_back({*task, file, id});
  auto verdicts = eval::run_batch(ev, jobs, 4);
  ASSERT_EQ(verdicts.size(), jobs.size());
  for (const auto& v : verdicts) {
    EXPECT_EQ(v.verdict, eval::VerdictClass::kOk) << v.message << "\n" << v.log;
    EXPECT_TRUE(v.seconds.slot.contains("device_wait")) << eval::to_json(v).dump();
    EXPECT_TRUE(v.seconds.slot.contains("timing_wait"));
    EXPECT_TRUE(v.reference_time && v.candidate_time);
  }
}

TEST(BuildTimeout, ExceedingMaxBuildSecondsIsATimeout) {
  auto options = test_options(build::Backend::kCpu);
  options.max_build = std::chrono::seconds(2);   // torch/extension.h alone takes longer
  options.build_path = build::BuildPath::kFull;  // the lean path builds this in ~1 s
  options.cache_dir.clear();
  eval::Evaluator ev(options);
  auto v = evaluate_file(ev, "elementwise/add", kSourceDir / "tests/fixtures/candidates/correct_cpu.py");
  EXPECT_EQ(v.verdict, eval::VerdictClass::kTimeout) << v.message;
  EXPECT_EQ(v.stage, eval::Stage::kBuild);
  EXPECT_DOUBLE_EQ(v.reward.total, 0.0);
}

TEST(Seeds, FreshInputsEveryEvaluationUnlessFixed) {
  auto options = test_options(build::Backend::kCpu);
  options.seed = 42;
  eval::Evaluator a(options), b(options);
  auto va = evaluate_file(a, "elementwise/add", kSourceDir / "tests/fixtures/candidates/wrong_math_cpu.py");
  auto vb = evaluate_file(b, "elementwise/add", kSourceDir / "tests/fixtures/candidates/wrong_math_cpu.py");
  auto vc = evaluate_file(b, "elementwise/add", kSourceDir / "tests/fixtures/candidates/wrong_math_cpu.py");
  ASSERT_EQ(va.verdict, eval::VerdictClass::kWrongAnswer) << va.message;
  EXPECT_EQ(va.max_abs_error, vb.max_abs_error);  // same seed, same inputs
  EXPECT_NE(vb.max_abs_error, vc.max_abs_error);  // next evaluation, new inputs
}

// The reference in the run slot's resident server and in a process of its own: same seeds,
// same reference outputs (the wrong candidate's error is measured against them).
TEST(ReferenceRunner, ResidentAndPerEvaluationReferencesAgree) {
  auto options = test_options(build::Backend::kCpu);
  options.seed = 7;
  eval::Evaluator resident(options);
  options.resident_reference = false;
  eval::Evaluator own_process(options);
  const auto wrong = kSourceDir / "tests/fixtures/candidates/wrong_math_cpu.py";
  auto vr = evaluate_file(resident, "elementwise/add", wrong);
  auto vo = evaluate_file(own_process, "elementwise/add", wrong);
  ASSERT_EQ(vr.verdict, eval::VerdictClass::kWrongAnswer) << vr.message << "\n" << vr.log;
  ASSERT_EQ(vo.verdict, eval::VerdictClass::kWrongAnswer) << vo.message << "\n" << vo.log;
  EXPECT_EQ(vr.config.value("reference_runner", ""), "resident");
  EXPECT_NE(vo.config.value("reference_runner", ""), "resident");
  EXPECT_EQ(vr.max_abs_error, vo.max_abs_error);
  EXPECT_EQ(vr.passed, vo.passed);
  auto ok =
      evaluate_file(resident, "elementwise/add", kSourceDir / "tests/fixtures/candidates/correct_cpu.py");
  EXPECT_EQ(ok.verdict, eval::VerdictClass::kOk) << ok.message << "\n" << ok.log;
  EXPECT_TRUE(ok.reference_time.has_value());
}

}  // namespace
}  // namespace musacoder::testing
