#include "mooreeval/compile/extension_build.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <thread>

#include "core/files.h"

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

// load_inline joins the flags into one ninja command line: KernelBench's example extra_cflags=[""]
// builds, and "-O3 -DX" is two flags. (A real sample with [""] scored compile_error before.)
TEST(ExtensionBuild, SpecFlagsAreTheCommandLineWords) {
  auto j = nlohmann::json::parse(R"({"name": "ext", "cpp_sources": ["x"], "cuda_sources": [], "functions": null,
    "extra_cflags": ["", " -O3 ", "-DA=1\t-DB=2"], "extra_cuda_cflags": ["  "], "extra_ldflags": [""],
    "extra_include_paths": [], "with_cuda": null, "with_pytorch_error_handling": true,
    "no_implicit_headers": false})");
  auto s = extension_spec_from_json(j);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->extra_cflags, (std::vector<std::string>{"-O3", "-DA=1", "-DB=2"}));
  EXPECT_TRUE(s->extra_cuda_cflags.empty());
  EXPECT_TRUE(s->extra_ldflags.empty());
}

// A stand-in compiler: logs each call, takes a while, and writes the file after -o.
const char* kFakeCompiler = R"(#!/bin/sh
echo "$@" >> "$(dirname "$0")/calls.log"
sleep 0.5
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then echo built > "$2"; fi
  shift
done
)";

TEST(ExtensionBuild, ConcurrentRequestsForOneKeyBuildOnce) {
  auto dir = TempDir::create("mc-build-test-");
  ASSERT_TRUE(dir.ok());
  const auto compiler = dir->path() / "fake-cxx";
  ASSERT_TRUE(write_file_atomic(compiler, kFakeCompiler).ok());
  ::chmod(compiler.c_str(), 0755);
  Toolchain t;
  t.cxx = compiler.string();
  ExtensionSpec s;
  s.name = "ext";
  s.cpp_sources = {"int f();"};
  BuildOptions o{Backend::kCpu, std::chrono::seconds(30), dir->path() / "cache"};
  BuildReport reports[3];
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    std::filesystem::create_directories(dir->path() / ("work" + std::to_string(i)));
    threads.emplace_back(
        [&, i] { reports[i] = build_extensions({s}, t, o, dir->path() / ("work" + std::to_string(i))); });
  }
  for (auto& th : threads) th.join();
  int hits = 0;
  for (const auto& r : reports) {
    ASSERT_EQ(r.outcome, BuildOutcome::kOk) << r.log;
    ASSERT_EQ(r.extensions.size(), 1u);
    auto text = read_file(r.extensions[0].library);  // a link to (or copy of) the one cached build
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, "built\n");
    hits += r.cache_hit;
  }
  EXPECT_EQ(hits, 2);
  auto calls = read_file(dir->path() / "calls.log");
  ASSERT_TRUE(calls.ok());
  EXPECT_EQ(std::count(calls->begin(), calls->end(), '\n'), 2);  // one compile, one link
}

}  // namespace
}  // namespace musacoder::build
