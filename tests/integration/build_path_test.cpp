// The lean build path gives the verdicts and rewards of load_inline's full build (cpu
// backend), on a cross-section that CI can afford.
#include <gtest/gtest.h>

#include "support/build_path_compare.h"

namespace musacoder::testing {
namespace {

// Each case costs a full build (~30-60 s of a CI core), so CI takes a cross-section: two
// solutions (an elementwise and a reduction kernel) and one broken candidate per verdict
// class decided at or after the build. tests/equivalence compares every candidate (cpu),
// tests/gpu every CUDA one.
std::vector<PathCase> cross_section() {
  std::vector<PathCase> out = solution_cases("cpu", {"elementwise/add", "norm/layernorm"});
  for (const auto& b : broken_cases("cpu"))
    for (const char* keep : {"compile_error_cpu", "segfault_cpu", "wrong_shape_cpu"})
      if (b.file.find(keep) != std::string::npos) out.push_back({b.task, "tests/fixtures/candidates/" + b.file});
  return out;
}

TEST(BuildPaths, CpuCrossSectionAgrees) {
  const auto cases = cross_section();
  ASSERT_EQ(cases.size(), 5u);
  expect_paths_agree("cpu", cases);
}

}  // namespace
}  // namespace musacoder::testing
