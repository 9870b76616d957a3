// End-to-end on the cpu backend: real runner processes, real torch, real g++.
#include <gtest/gtest.h>

#include "support/eval_env.h"

namespace musacoder::testing {
namespace {

// Each created on first use and kept for the process (a ONE_PROCESS group shares it).
const TestEvaluator& cpu_evaluator() {
  static const TestEvaluator ev = make_evaluator(test_options("cpu"));
  return ev;
}

const TestEvaluator& short_deadline_evaluator() {
  static const TestEvaluator ev = make_evaluator(short_deadline_options("cpu"));
  return ev;
}

// The submissions of a batch: one task, these files.
std::vector<mooreeval::Submission> file_submissions(const mooreeval::Task& task,
                                                    const std::vector<std::filesystem::path>& files) {
  std::vector<mooreeval::Submission> out;
  for (const auto& f : files) out.push_back({task, "", f});
  return out;
}

class CpuSolution : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuSolution, ScoresOkWithRewardAtLeast06) {
  const auto& ev = cpu_evaluator();
  ASSERT_TRUE(ev) << ev.why;
  auto v = evaluate_file(*ev, GetParam(), kSourceDir / "solutions/cpu" / (GetParam() + ".py"));
  EXPECT_EQ(mooreeval::verdict_name(v.verdict), std::string("ok")) << v.message << "\n" << v.log;
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
  const auto& ev = c.expected == "timeout" ? short_deadline_evaluator() : cpu_evaluator();
  ASSERT_TRUE(ev) << ev.why;
  auto v = evaluate_file(*ev, c.task, kSourceDir / "tests/fixtures/candidates" / c.file);
  EXPECT_EQ(mooreeval::verdict_name(v.verdict), c.expected) << c.file << ": " << v.message << "\n" << v.log;
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
  auto options = test_options("cpu");
  options.deadlines.max_run = std::chrono::seconds(45);
  options.concurrency.workers = 2;  // evaluate_batch's threads
  auto ev = make_evaluator(options);
  ASSERT_TRUE(ev) << ev.why;
  auto task = bundled_task("elementwise/add");
  ASSERT_TRUE(task.ok());
  const auto dir = kSourceDir / "tests/fixtures/candidates";
  const char* labels[] = {"segfault", "after-segfault", "loop", "after-loop", "raises", "after-raise"};
  const auto submissions =
      file_submissions(*task, {dir / "segfault_cpu.py", dir / "correct_cpu.py", dir / "infinite_loop_cpu.py",
                               dir / "correct_cpu.py", dir / "raises_in_forward.py", dir / "correct_cpu.py"});
  auto verdicts = ev->evaluate_batch(submissions);
  ASSERT_EQ(verdicts.size(), submissions.size());
  EXPECT_EQ(verdicts[0].verdict, mooreeval::VerdictClass::kRuntimeError) << verdicts[0].message;
  EXPECT_EQ(verdicts[2].verdict, mooreeval::VerdictClass::kTimeout) << verdicts[2].message;
  EXPECT_EQ(verdicts[4].verdict, mooreeval::VerdictClass::kRuntimeError) << verdicts[4].message;
  for (int i : {1, 3, 5})
    EXPECT_EQ(verdicts[i].verdict, mooreeval::VerdictClass::kOk) << labels[i] << ": " << verdicts[i].message;
}

// Candidate runners start before their run slot (prestart_runners) and wait at their gate;
// their deadline counts from the slot. Three candidates that each hold the one slot ~8 s:
// the last waits longer than --max-run-seconds and must still score ok.
TEST(RunSlots, ARunnerStartedAheadGetsItsDeadlineFromTheSlot) {
  auto options = test_options("cpu");
  options.deadlines.max_run = std::chrono::seconds(12);
  options.concurrency.run_slots = 1;
  options.concurrency.prestart_runners = 2;
  options.concurrency.workers = 3;    // evaluate_batch's threads
  auto ev = make_evaluator(options);  // create() prepares: the warm pools are up before the batch
  ASSERT_TRUE(ev) << ev.why;
  auto task = bundled_task("elementwise/add");
  ASSERT_TRUE(task.ok());
  const auto file = kSourceDir / "tests/fixtures/candidates/slow_init_cpu.py";
  const auto submissions = file_submissions(*task, {file, file, file});
  auto verdicts = ev->evaluate_batch(submissions);
  ASSERT_EQ(verdicts.size(), submissions.size());
  double longest_wait = 0;
  for (const auto& v : verdicts) {
    EXPECT_EQ(v.verdict, mooreeval::VerdictClass::kOk) << v.message << "\n" << v.log;
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
  auto options = test_options("cpu");
  options.concurrency.run_slots = 3;
  options.concurrency.workers = 4;  // evaluate_batch's threads
  auto ev = make_evaluator(options);
  ASSERT_TRUE(ev) << ev.why;
  auto task = bundled_task("elementwise/add");
  ASSERT_TRUE(task.ok());
  const auto file = kSourceDir / "tests/fixtures/candidates/correct_cpu.py";
  const auto submissions = file_submissions(*task, {file, file, file, file});
  auto verdicts = ev->evaluate_batch(submissions);
  ASSERT_EQ(verdicts.size(), submissions.size());
  for (const auto& v : verdicts) {
    EXPECT_EQ(v.verdict, mooreeval::VerdictClass::kOk) << v.message << "\n" << v.log;
    EXPECT_TRUE(v.seconds.slot.contains("device_wait")) << mooreeval::to_json(v).dump();
    EXPECT_TRUE(v.seconds.slot.contains("timing_wait"));
    EXPECT_TRUE(v.reference_time && v.candidate_time);
  }
}

TEST(BuildTimeout, ExceedingMaxBuildSecondsIsATimeout) {
  auto options = test_options("cpu");
  options.deadlines.max_build = std::chrono::seconds(2);  // torch/extension.h alone takes longer
  options.compile.build_path = "full";                    // the lean path builds this in ~1 s
  options.compile.cache_dir.clear();
  auto ev = make_evaluator(options);
  ASSERT_TRUE(ev) << ev.why;
  auto v = evaluate_file(*ev, "elementwise/add", kSourceDir / "tests/fixtures/candidates/correct_cpu.py");
  EXPECT_EQ(v.verdict, mooreeval::VerdictClass::kTimeout) << v.message;
  EXPECT_EQ(v.stage, mooreeval::Stage::kBuild);
  EXPECT_DOUBLE_EQ(v.reward.total, 0.0);
}

TEST(Seeds, FreshInputsEveryEvaluationUnlessFixed) {
  auto options = test_options("cpu");
  options.check.seed = 42;
  auto a = make_evaluator(options), b = make_evaluator(options);
  ASSERT_TRUE(a) << a.why;
  ASSERT_TRUE(b) << b.why;
  auto va = evaluate_file(*a, "elementwise/add", kSourceDir / "tests/fixtures/candidates/wrong_math_cpu.py");
  auto vb = evaluate_file(*b, "elementwise/add", kSourceDir / "tests/fixtures/candidates/wrong_math_cpu.py");
  auto vc = evaluate_file(*b, "elementwise/add", kSourceDir / "tests/fixtures/candidates/wrong_math_cpu.py");
  ASSERT_EQ(va.verdict, mooreeval::VerdictClass::kWrongAnswer) << va.message;
  EXPECT_EQ(va.max_abs_error, vb.max_abs_error);  // same seed, same inputs
  EXPECT_NE(vb.max_abs_error, vc.max_abs_error);  // next evaluation, new inputs
}

// The reference in the run slot's resident server and in a process of its own: same seeds,
// same reference outputs (the wrong candidate's error is measured against them).
TEST(ReferenceRunner, ResidentAndPerEvaluationReferencesAgree) {
  auto options = test_options("cpu");
  options.check.seed = 7;
  auto resident = make_evaluator(options);
  ASSERT_TRUE(resident) << resident.why;
  options.runner.resident_reference = false;
  auto own_process = make_evaluator(options);
  ASSERT_TRUE(own_process) << own_process.why;
  const auto wrong = kSourceDir / "tests/fixtures/candidates/wrong_math_cpu.py";
  auto vr = evaluate_file(*resident, "elementwise/add", wrong);
  auto vo = evaluate_file(*own_process, "elementwise/add", wrong);
  ASSERT_EQ(vr.verdict, mooreeval::VerdictClass::kWrongAnswer) << vr.message << "\n" << vr.log;
  ASSERT_EQ(vo.verdict, mooreeval::VerdictClass::kWrongAnswer) << vo.message << "\n" << vo.log;
  EXPECT_EQ(vr.config.value("reference_runner", ""), "resident");
  EXPECT_NE(vo.config.value("reference_runner", ""), "resident");
  EXPECT_EQ(vr.max_abs_error, vo.max_abs_error);
  EXPECT_EQ(vr.passed, vo.passed);
  auto ok =
      evaluate_file(*resident, "elementwise/add", kSourceDir / "tests/fixtures/candidates/correct_cpu.py");
  EXPECT_EQ(ok.verdict, mooreeval::VerdictClass::kOk) << ok.message << "\n" << ok.log;
  EXPECT_TRUE(ok.reference_time.has_value());
}

}  // namespace
}  // namespace musacoder::testing
