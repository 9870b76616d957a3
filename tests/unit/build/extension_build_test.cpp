#include "build/extension_build.h"

#include <gtest/gtest.h>

namespace musacoder::build {
namespace {

// The generated sources must equal what torch.utils.cpp_extension.load_inline writes
// (main.cpp / cuda.cu), so that the build has load_inline's semantics.
TEST(ExtensionBuild, GeneratedSourcesMatchLoadInline) {
  ExtensionSpec s;
  s.name = "ext";
  s.cpp_sources = {"torch::Tensor f(torch::Tensor x);"};
  s.cuda_sources = {"__global__ void k() {}"};
  s.has_functions = true;
  s.functions = {{"f", "f"}};
  EXPECT_EQ(generated_cpp_source(s),
            "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x);\n"
            "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
            "m.def(\"f\", torch::wrap_pybind_function(f), \"f\");\n}");
  EXPECT_EQ(generated_cuda_source(s),
            "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n__global__ void k() {}");
  s.with_pytorch_error_handling = false;
  s.no_implicit_headers = true;
  EXPECT_EQ(generated_cpp_source(s),
            "torch::Tensor f(torch::Tensor x);\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
            "m.def(\"f\", f, \"f\");\n}");
}

TEST(ExtensionBuild, CudaSourcesOnTheCpuBackendAreACompileError) {
  ExtensionSpec s;
  s.name = "ext";
  s.cpp_sources = {""};
  s.cuda_sources = {"__global__ void k() {}"};
  Toolchain t;
  auto r = build_extensions({s}, t, {Backend::kCpu}, "/tmp");
  EXPECT_EQ(r.outcome, BuildOutcome::kCompileError);
  EXPECT_NE(r.log.find("backend is cpu"), std::string::npos);
}

TEST(ExtensionBuild, SpecFromJsonRejectsMalformed) {
  EXPECT_FALSE(extension_spec_from_json(nlohmann::json::parse(R"({"name": 3})")).ok());
}

}  // namespace
}  // namespace musacoder::build
