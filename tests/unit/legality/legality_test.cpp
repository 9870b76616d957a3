#include "legality/legality.h"

#include <gtest/gtest.h>

namespace musacoder::legality {
namespace {

TEST(Legality, DispatchedOpsAllowlist) {
  LegalityOptions o;
  EXPECT_TRUE(check_dispatched_ops({{"empty", 2}, {"view", 1}}, o).empty());
  auto f = check_dispatched_ops({{"empty", 1}, {"add", 1}, {"mm", 3}}, o);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].rule, "torch_compute_op");
  EXPECT_NE(describe(f).find("aten::add"), std::string::npos);
  o.check_runtime_ops = false;
  EXPECT_TRUE(check_dispatched_ops({{"add", 1}}, o).empty());
}

TEST(Legality, CudaSourcesMustLaunchAKernel) {
  build::ExtensionSpec s;
  s.name = "e";
  s.cuda_sources = {"__global__ void k(float* x) { x[0] = 1; }\nvoid run(float* x) { k<<<1, 1>>>(x); }"};
  EXPECT_TRUE(check_extension_sources({s}, build::Backend::kCuda).empty());
  s.cuda_sources = {"__global__ void k(float* x) { x[0] = 1; }\nvoid run(float* x) {}"};
  EXPECT_EQ(check_extension_sources({s}, build::Backend::kCuda).at(0).rule, "kernel_not_launched");
  s.cuda_sources = {"void run(float* x) {}"};
  EXPECT_EQ(check_extension_sources({s}, build::Backend::kCuda).at(0).rule, "no_device_kernel");
  EXPECT_EQ(check_extension_sources({}, build::Backend::kCpu).at(0).rule, "no_kernel");
}

TEST(Legality, InspectionFindingsAreParsed) {
  auto f =
      findings_from_inspection(nlohmann::json::parse(R"([{"rule":"try_fallback","message":"m","line":3}])"));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].line, 3);
  EXPECT_TRUE(findings_from_inspection(nlohmann::json("junk")).empty());
}

}  // namespace
}  // namespace musacoder::legality
