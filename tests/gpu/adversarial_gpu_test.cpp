// The adversarial corpus on the cuda backend (GPU machine): every cuda case gets its expected
// verdict and rule, and right after each one the correct CUDA fixture still scores ok (no
// leaked processes, files or GPU state). Skips with the reason where torch sees no GPU.
#include <gtest/gtest.h>

#include "support/adversarial.h"

namespace musacoder::testing {
namespace {

eval::EvalOptions cuda_options() {
  auto o = test_options(build::Backend::kCuda);
  o.warmup_iters = 10;
  o.benchmark_iters = 50;
  return o;
}

eval::Evaluator& cuda_evaluator() {
  static eval::Evaluator ev(cuda_options());
  return ev;
}

eval::Evaluator& short_deadline_evaluator() {
  static eval::Evaluator ev([] {
    auto o = cuda_options();
    o.max_run = std::chrono::seconds(40);
    return o;
  }());
  return ev;
}

const std::string& gpu_unavailable_reason() {
  static const std::string reason = cuda_unavailable_reason(cuda_evaluator());
  return reason;
}

class CudaAdversarial : public ::testing::TestWithParam<AdversarialCase> {};

TEST_P(CudaAdversarial, GetsItsVerdictAndTheNextCandidateStillScoresOk) {
  if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << "skipped: " << gpu_unavailable_reason();
  const auto& c = GetParam();
  if (c.needs_sandbox && !sandbox_present()) GTEST_SKIP() << c.file << " needs the per-job sandbox";
  const auto file = kSourceDir / "tests/adversarial" / c.file;
  auto v =
      evaluate_file(c.expected == "timeout" ? short_deadline_evaluator() : cuda_evaluator(), c.task, file);
  EXPECT_EQ(eval::verdict_name(v.verdict), c.expected) << c.file << ": " << v.message << "\n" << v.log;
  if (!c.rule.empty()) {
    EXPECT_TRUE(has_rule(v, c.rule)) << c.file << ": expected rule " << c.rule << ", got " << v.message;
  }
  EXPECT_EQ(leaked_secret(v), "") << c.file << " leaked a host file line into its verdict";
  auto next = evaluate_file(cuda_evaluator(), "elementwise/add",
                            kSourceDir / "tests/fixtures/candidates/correct_cuda.py");
  EXPECT_EQ(eval::verdict_name(next.verdict), std::string("ok"))
      << "after " << c.file << ": " << next.message << "\n"
      << next.log;
  std::printf("GPU_RESULT adversarial %s verdict=%s expected=%s next=%s message=%s\n", c.file.c_str(),
              eval::verdict_name(v.verdict), c.expected.c_str(), eval::verdict_name(next.verdict),
              v.message.substr(0, 160).c_str());
}

INSTANTIATE_TEST_SUITE_P(Corpus, CudaAdversarial, ::testing::ValuesIn(adversarial_cases("cuda")),
                         [](const auto& info) { return param_name(info.param.file); });

// The kernel-time attribution on its own: with the import check off, ATen's relu beside a token kernel
// of the candidate's reaches the run, and the profiled call's own-kernel share fails it — with the
// shares in the message; the honest relu solution's share passes.
TEST(ForeignKernelTime, ATokenKernelBesideAnAtenKernelFails) {
  if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << "skipped: " << gpu_unavailable_reason();
  static eval::Evaluator no_import_check([] {
    auto o = cuda_options();
    o.legality.check_library_imports = false;
    return o;
  }());
  auto v = evaluate_file(no_import_check, "activation/relu", kSourceDir / "tests/adversarial/bypass_redispatch_cuda.py");
  EXPECT_EQ(eval::verdict_name(v.verdict), std::string("illegal")) << v.message << "\n" << v.log;
  EXPECT_TRUE(has_rule(v, "foreign_kernel_time")) << v.message;
  EXPECT_NE(v.message.find("own kernels took"), std::string::npos) << v.message;
  auto honest = evaluate_file(no_import_check, "activation/relu", kSourceDir / "solutions/cuda/activation/relu.py");
  EXPECT_EQ(eval::verdict_name(honest.verdict), std::string("ok")) << honest.message << "\n" << honest.log;
  std::printf("GPU_RESULT foreign_kernel_time hack=%s honest=%s message=%s\n", eval::verdict_name(v.verdict),
              eval::verdict_name(honest.verdict), v.message.substr(0, 300).c_str());
}

}  // namespace
}  // namespace musacoder::testing
