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

eval::Evaluator& cuda_evaluator() {
  static eval::Evaluator ev(test_options(build::Backend::kCuda));
  return ev;
}

eval::Evaluator& short_deadline_evaluator() {
  static eval::Evaluator ev(short_deadline_options(build::Backend::kCuda));
  return ev;
}

const std::string& gpu_unavailable_reason() {
  static const std::string reason = cuda_unavailable_reason(cuda_evaluator());
  return reason;
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

eval::Verdict evaluate_text(eval::Evaluator& ev, const std::string& task_id, const std::string& text) {
  auto task = task::resolve_task(task_id, kSourceDir / "tasks");
  if (!task.ok()) return ADD_FAILURE() << task.status().to_string(), eval::Verdict{};
  return ev.evaluate(*task, text);
}

class ShimmedSolution : public ::testing::TestWithParam<std::string> {};

TEST_P(ShimmedSolution, ScoresOkOnCuda) {
  if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << "skipped: " << gpu_unavailable_reason();
  const std::string text = ported_and_shimmed(kSourceDir / "solutions/cuda" / (GetParam() + ".py"));
  auto v = evaluate_text(cuda_evaluator(), GetParam(), text);
  EXPECT_EQ(eval::verdict_name(v.verdict), std::string("ok")) << v.message << "\n" << v.log;
  std::printf("MUSA_SHIM_RESULT %s verdict=%s reward=%.3f speedup=%.2f build_path=%s\n", GetParam().c_str(),
              eval::verdict_name(v.verdict), v.reward.total, v.speedup.value_or(-1), v.build_path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Bundled, ShimmedSolution, ::testing::ValuesIn(bundled_task_ids()),
                         [](const auto& info) { return param_name(info.param); });

class ShimmedBroken : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(ShimmedBroken, KeepsItsVerdictClass) {
  if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << "skipped: " << gpu_unavailable_reason();
  const auto& c = GetParam();
  const std::filesystem::path file = kSourceDir / "tests/fixtures/candidates" / c.file;
  if (file.extension() != ".py") GTEST_SKIP() << c.file << " is not a Python file";
  auto& ev = c.expected == "timeout" ? short_deadline_evaluator() : cuda_evaluator();
  auto v = evaluate_text(ev, c.task, ported_and_shimmed(file));
  EXPECT_EQ(eval::verdict_name(v.verdict), c.expected) << c.file << ": " << v.message << "\n" << v.log;
  std::printf("MUSA_SHIM_RESULT %s verdict=%s expected=%s\n", c.file.c_str(), eval::verdict_name(v.verdict),
              c.expected.c_str());
}

INSTANTIATE_TEST_SUITE_P(Corpus, ShimmedBroken, ::testing::ValuesIn(broken_cases("cuda")),
                         [](const auto& info) { return param_name(info.param.file); });

}  // namespace
}  // namespace musacoder::testing
