// The adversarial corpus on the cuda backend (GPU machine): every cuda case gets its expected
// verdict and rule, and right after each one the correct CUDA fixture still scores ok (no
// leaked processes, files or GPU state). Skips with the reason where torch sees no GPU.
#include <gtest/gtest.h>

#include "support/adversarial.h"

namespace musacoder::testing {
namespace {

mooreeval::Options cuda_options() {
  auto o = test_options("cuda");
  o.timing.warmup_iters = 10;
  o.timing.benchmark_iters = 50;
  return o;
}

// Each created on first use and kept for the process (the Corpus group shares them). Where the
// cuda evaluator cannot be created, its `why` is the reason every test skips.
const TestEvaluator& cuda_evaluator() {
  static const TestEvaluator ev = make_evaluator(cuda_options());
  return ev;
}

const TestEvaluator& short_deadline_evaluator() {
  static const TestEvaluator ev = make_evaluator([] {
    auto o = cuda_options();
    o.deadlines.max_run = std::chrono::seconds(40);
    return o;
  }());
  return ev;
}

class CudaAdversarial : public ::testing::TestWithParam<AdversarialCase> {};

TEST_P(CudaAdversarial, GetsItsVerdictAndTheNextCandidateStillScoresOk) {
  if (!cuda_evaluator()) GTEST_SKIP() << "skipped: " << cuda_evaluator().why;
  const auto& c = GetParam();
  if (c.needs_sandbox && !sandbox_present()) GTEST_SKIP() << c.file << " needs the per-job sandbox";
  const auto file = kSourceDir / "tests/adversarial" / c.file;
  const auto& ev = c.expected == "timeout" ? short_deadline_evaluator() : cuda_evaluator();
  ASSERT_TRUE(ev) << ev.why;
  auto v = evaluate_file(*ev, c.task, file);
  EXPECT_EQ(mooreeval::verdict_name(v.verdict), c.expected) << c.file << ": " << v.message << "\n" << v.log;
  if (!c.rule.empty()) {
    EXPECT_TRUE(has_rule(v, c.rule)) << c.file << ": expected rule " << c.rule << ", got " << v.message;
  }
  EXPECT_EQ(leaked_secret(v), "") << c.file << " leaked a host file line into its verdict";
  auto next = evaluate_file(*cuda_evaluator(), "elementwise/add",
                            kSourceDir / "tests/fixtures/candidates/correct_cuda.py");
  EXPECT_EQ(mooreeval::verdict_name(next.verdict), std::string("ok"))
      << "after " << c.file << ": " << next.message << "\n"
      << next.log;
  std::printf("GPU_RESULT adversarial %s verdict=%s expected=%s next=%s message=%s\n", c.file.c_str(),
              mooreeval::verdict_name(v.verdict), c.expected.c_str(), mooreeval::verdict_name(next.verdict),
              v.message.substr(0, 160).c_str());
}

INSTANTIATE_TEST_SUITE_P(Corpus, CudaAdversarial, ::testing::ValuesIn(adversarial_cases("cuda")),
                         [](const auto& info) { return param_name(info.param.file); });

// The kernel-time attribution on its own: with the import check off, ATen's relu beside a token kernel
// of the candidate's reaches the run, and the profiled call's own-kernel share fails it — with the
// shares in the message; the honest relu solution's share passes.
TEST(ForeignKernelTime, ATokenKernelBesideAnAtenKernelFails) {
  if (!cuda_evaluator()) GTEST_SKIP() << "skipped: " << cuda_evaluator().why;
  static const TestEvaluator no_import_check = make_evaluator([] {
    auto o = cuda_options();
    o.legality.check_library_imports = false;
    return o;
  }());
  ASSERT_TRUE(no_import_check) << no_import_check.why;
  auto v = evaluate_file(*no_import_check, "activation/relu",
                         kSourceDir / "tests/adversarial/bypass_redispatch_cuda.py");
  EXPECT_EQ(mooreeval::verdict_name(v.verdict), std::string("illegal")) << v.message << "\n" << v.log;
  EXPECT_TRUE(has_rule(v, "foreign_kernel_time")) << v.message;
  EXPECT_NE(v.message.find("own kernels took"), std::string::npos) << v.message;
  auto honest =
      evaluate_file(*no_import_check, "activation/relu", kSourceDir / "solutions/cuda/activation/relu.py");
  EXPECT_EQ(mooreeval::verdict_name(honest.verdict), std::string("ok")) << honest.message << "\n"
                                                                        << honest.log;
  std::printf("GPU_RESULT foreign_kernel_time hack=%s honest=%s message=%s\n",
              mooreeval::verdict_name(v.verdict), mooreeval::verdict_name(honest.verdict),
              v.message.substr(0, 300).c_str());
}

}  // namespace
}  // namespace musacoder::testing
