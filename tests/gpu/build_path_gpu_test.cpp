// Every candidate on the cuda backend — each bundled CUDA solution (the benchmark's set),
// each broken candidate, each adversarial case — gets the same verdict and reward by the
// lean and the full build path. Skips (with the reason) where torch sees no GPU.
#include <gtest/gtest.h>

#include "support/build_path_compare.h"

namespace musacoder::testing {
namespace {

TEST(BuildPaths, CudaEveryCandidateAgrees) {
  const auto probe = make_evaluator(test_options("cuda"));
  if (!probe) GTEST_SKIP() << "skipped: " << probe.why;
  const auto cases = every_candidate("cuda");
  ASSERT_GE(cases.size(), 45u);
  expect_paths_agree("cuda", cases);
}

}  // namespace
}  // namespace musacoder::testing
