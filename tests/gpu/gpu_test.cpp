// The cuda backend on a GPU machine: every bundled CUDA reference solution and the
// broken CUDA candidates. Skips (with the reason) where torch sees no GPU.
#include <gtest/gtest.h>

#include "support/eval_env.h"

namespace musacoder::testing {
namespace {

// Each created on first use and kept for the process (a ONE_PROCESS group shares it). Where the
// cuda evaluator cannot be created, its `why` is the reason every test skips.
const TestEvaluator& cuda_evaluator() {
  static const TestEvaluator ev = make_evaluator([] {
    auto o = test_options("cuda");
    o.timing.warmup_iters = 10;
    o.timing.benchmark_iters = 50;
    return o;
  }());
  return ev;
}

const TestEvaluator& short_deadline_evaluator() {
  static const TestEvaluator ev = make_evaluator(short_deadline_options("cuda"));
  return ev;
}

#define SKIP_WITHOUT_GPU()                                                      \
  do {                                                                          \
    if (!cuda_evaluator()) GTEST_SKIP() << "skipped: " << cuda_evaluator().why; \
  } while (0)

class CudaSolution : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaSolution, ScoresOkWithRewardAtLeast06) {
  SKIP_WITHOUT_GPU();
  auto v = evaluate_file(*cuda_evaluator(), GetParam(), kSourceDir / "solutions/cuda" / (GetParam() + ".py"));
  EXPECT_EQ(mooreeval::verdict_name(v.verdict), std::string("ok")) << v.message << "\n" << v.log;
  EXPECT_GE(v.reward.total, 0.6);
  std::printf("GPU_RESULT %s verdict=%s reward=%.3f ref_ms=%.4f cand_ms=%.4f speedup=%.2f build_s=%.1f\n",
              GetParam().c_str(), mooreeval::verdict_name(v.verdict), v.reward.total,
              v.reference_time ? v.reference_time->median_ms : -1,
              v.candidate_time ? v.candidate_time->median_ms : -1, v.speedup.value_or(-1), v.seconds.build);
}

INSTANTIATE_TEST_SUITE_P(Bundled, CudaSolution, ::testing::ValuesIn(bundled_task_ids()),
                         [](const auto& info) { return param_name(info.param); });

class CudaBroken : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(CudaBroken, GetsItsVerdictClass) {
  SKIP_WITHOUT_GPU();
  const auto& c = GetParam();
  const auto& ev = c.expected == "timeout" ? short_deadline_evaluator() : cuda_evaluator();
  ASSERT_TRUE(ev) << ev.why;
  auto v = evaluate_file(*ev, c.task, kSourceDir / "tests/fixtures/candidates" / c.file);
  EXPECT_EQ(mooreeval::verdict_name(v.verdict), c.expected) << c.file << ": " << v.message << "\n" << v.log;
  std::printf("GPU_RESULT %s verdict=%s expected=%s message=%s\n", c.file.c_str(),
              mooreeval::verdict_name(v.verdict), c.expected.c_str(), v.message.substr(0, 120).c_str());
}

INSTANTIATE_TEST_SUITE_P(Corpus, CudaBroken, ::testing::ValuesIn(broken_cases("cuda")),
                         [](const auto& info) { return param_name(info.param.file); });

}  // namespace
}  // namespace musacoder::testing
