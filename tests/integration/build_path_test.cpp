// The lean build path gives the verdicts of load_inline's full build (cpu backend).
#include <gtest/gtest.h>

#include "support/build_path_compare.h"

namespace musacoder::testing {
namespace {

class LeanMatchesFull : public ::testing::TestWithParam<PathCase> {};

TEST_P(LeanMatchesFull, SameVerdict) {
  expect_same_verdict_both_paths(build::Backend::kCpu, GetParam());
}

// Each case costs a full build (~30 s of a core here), so CI takes a cross-section: three
// solutions and one broken candidate per verdict class decided at or after the build. The
// gpu suite compares more (tests/gpu/gpu_test.cpp), and so does bench/compile_throughput.
std::vector<PathCase> cpu_cases() {
  std::vector<PathCase> out;
  for (const auto& c : path_cases("cpu", {"elementwise/add", "norm/layernorm", "matmul/matmul"}))
    for (const char* keep :
         {"solutions/", "compile_error_cpu", "segfault_cpu", "wrong_shape_cpu", "correct_cpu"})
      if (c.file.find(keep) != std::string::npos) {
        out.push_back(c);
        break;
      }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cpu, LeanMatchesFull, ::testing::ValuesIn(cpu_cases()), path_case_name);

}  // namespace
}  // namespace musacoder::testing
