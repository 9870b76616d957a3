// The lean build path gives the verdicts of load_inline's full build (cpu backend).
#include <gtest/gtest.h>

#include "support/build_path_compare.h"

namespace musacoder::testing {
namespace {

class LeanMatchesFull : public ::testing::TestWithParam<PathCase> {};

TEST_P(LeanMatchesFull, SameVerdict) { expect_same_verdict_both_paths(build::Backend::kCpu, GetParam()); }

// One solution per category keeps the full builds (~30 s each on 2 cores) within budget.
INSTANTIATE_TEST_SUITE_P(Cpu, LeanMatchesFull,
                         ::testing::ValuesIn(path_cases("cpu", {"elementwise/add", "activation/gelu", "reduction/sum_dim",
                                                                "norm/layernorm", "matmul/matmul", "conv/conv2d",
                                                                "fusion/linear_relu"})),
                         path_case_name);

}  // namespace
}  // namespace musacoder::testing
