// The reverse shim on a GPU machine (issue 25): every bundled CUDA solution and every broken CUDA candidate,
// ported to MUSA (src/musa, torchada's rules) and shimmed back (MUSA names kept in the kernel sources and
// compiled by nvcc through the shim header), gets the same verdict class through MooreEval's cuda backend
// as the original: ok for the solutions, the manifest's class for the broken candidates. Skips where torch
// sees no GPU.
#include <gtest/gtest.h>

#include "musa/musa.h"
#include "support/eval_env.h"

namespace musacoder::testing {
namespace {

// Each created on first use and kept for the process (a ONE_PROCESS group shares it). Where the
// cuda evaluator cannot be created, its `why` is the reason every test skips.
const TestEvaluator& cuda_evaluator() {
  static const TestEvaluator ev = make_evaluator(test_options("cuda"));
  return ev;
}

const TestEvaluator& short_deadline_evaluator() {
  static const TestEvaluator ev = make_evaluator(short_deadline_options("cuda"));
  return ev;
}

// The file ported to MUSA, then shimmed back; "" plus a failure when either step fails.
std::string ported_and_shimmed(const std::filesystem::path& file) {
  auto text = read_file(file);
  if (!text.ok()) return ADD_FAILURE() << file, "";
  const musa::PortResult ported = musa::port_source(*text, musa::SourceKind::kPython, musa::Direction::kToMusa);
  EXPECT_TRUE(ported.unmapped.empty()) << file;
  auto shimmed = musa::shim_submission(ported.text);
  if (!shimmed.ok()) return ADD_FAILURE() << file << ": " << shimmed.status().to_string(), "";
  return *shimmed;
}

mooreeval::Verdict evaluate_text(mooreeval::Evaluator& ev, const std::string& task_id,
                                 const std::string& text) {
  auto task = bundled_task(task_id);
  if (!task.ok()) return ADD_FAILURE() << task.status().to_string(), mooreeval::Verdict{};
  return ev.evaluate(*task, text);
}

class ShimmedSolution : public ::testing::TestWithParam<std::string> {};

TEST_P(ShimmedSolution, ScoresOkOnCuda) {
  if (!cuda_evaluator()) GTEST_SKIP() << "skipped: " << cuda_evaluator().why;
  const std::string text = ported_and_shimmed(kSourceDir / "solutions/cuda" / (GetParam() + ".py"));
  auto v = evaluate_text(*cuda_evaluator(), GetParam(), text);
  EXPECT_EQ(mooreeval::verdict_name(v.verdict), std::string("ok")) << v.message << "\n" << v.log;
  std::printf("MUSA_SHIM_RESULT %s verdict=%s reward=%.3f speedup=%.2f build_path=%s\n", GetParam().c_str(),
              mooreeval::verdict_name(v.verdict), v.reward.total, v.speedup.value_or(-1),
              v.build_path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Bundled, ShimmedSolution, ::testing::ValuesIn(bundled_task_ids()),
                         [](const auto& info) { return param_name(info.param); });

class ShimmedBroken : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(ShimmedBroken, KeepsItsVerdictClass) {
  if (!cuda_evaluator()) GTEST_SKIP() << "skipped: " << cuda_evaluator().why;
  const auto& c = GetParam();
  const std::filesystem::path file = kSourceDir / "tests/fixtures/candidates" / c.file;
  if (file.extension() != ".py") GTEST_SKIP() << c.file << " is not a Python file";
  const auto& ev = c.expected == "timeout" ? short_deadline_evaluator() : cuda_evaluator();
  ASSERT_TRUE(ev) << ev.why;
  auto v = evaluate_text(*ev, c.task, ported_and_shimmed(file));
  EXPECT_EQ(mooreeval::verdict_name(v.verdict), c.expected) << c.file << ": " << v.message << "\n" << v.log;
  std::printf("MUSA_SHIM_RESULT %s verdict=%s expected=%s\n", c.file.c_str(),
              mooreeval::verdict_name(v.verdict), c.expected.c_str());
}

INSTANTIATE_TEST_SUITE_P(Corpus, ShimmedBroken, ::testing::ValuesIn(broken_cases("cuda")),
                         [](const auto& info) { return param_name(info.param.file); });

}  // namespace
}  // namespace musacoder::testing
