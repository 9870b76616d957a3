#include "mooreeval/compile/lean_build.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>

#include "mooreeval/compile/extension_build.h"
#include "core/files.h"

namespace musacoder::build {
namespace {

namespace fs = std::filesystem;

ExtensionSpec add_spec() {
  ExtensionSpec s;
  s.name = "ext";
  s.cpp_sources = {"torch::Tensor add(torch::Tensor a, torch::Tensor b);"};
  s.has_functions = true;
  s.functions = {{"add", "add"}};
  return s;
}

bool has(const std::vector<std::string>& argv, const std::string& needle) {
  return std::any_of(argv.begin(), argv.end(),
                     [&](const std::string& a) { return a.find(needle) != std::string::npos; });
}

TEST(LeanBuild, UnsuitableSources) {
  EXPECT_EQ(lean_unsuitable_reason(add_spec()), "");
  ExtensionSpec no_functions = add_spec();
  no_functions.has_functions = false;
  EXPECT_NE(lean_unsuitable_reason(no_functions), "");
  ExtensionSpec pybind = add_spec();
  pybind.cpp_sources.push_back("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}");
  EXPECT_NE(lean_unsuitable_reason(pybind).find("PYBIND11"), std::string::npos);
  ExtensionSpec library = add_spec();
  library.cuda_sources = {"TORCH_LIBRARY(my_ops, m) {}"};
  EXPECT_NE(lean_unsuitable_reason(library), "");
  ExtensionSpec odd_name = add_spec();
  odd_name.functions = {{"ns::add", "add"}};
  EXPECT_NE(lean_unsuitable_reason(odd_name), "");
}

TEST(LeanBuild, SourceExportsEveryFunction) {
  ExtensionSpec s = add_spec();
  s.functions.push_back({"scale", "doc"});
  EXPECT_EQ(
      lean_cpp_source(s),
      "#include <torch/extension.h>\ntorch::Tensor add(torch::Tensor a, torch::Tensor b);\n"
      "#include <mooreeval_lean/bindings.h>\nMOOREEVAL_LEAN_EXPORT(add)\nMOOREEVAL_LEAN_EXPORT(scale)\n");
}

// The lean compile sees the lean headers and none of torch's; the link names the shim.
TEST(LeanBuild, NeedsStringWhenASourceNamesIt) {
  EXPECT_FALSE(lean_needs_string({}));
  EXPECT_FALSE(lean_needs_string({"TORCH_CHECK(e == cudaSuccess, cudaGetErrorString(e)); // a substring"}));
  EXPECT_FALSE(lean_needs_string({"int strings = 1; auto tostring = stoix;"}));
  EXPECT_TRUE(lean_needs_string({"__global__ void k() {}", "std::string name;"}));
  EXPECT_TRUE(lean_needs_string({"#include <string>"}));
  EXPECT_TRUE(lean_needs_string({"auto n = std::to_string(3);"}));
  EXPECT_TRUE(lean_needs_string({"int n = std::stoi(s)"}));
  EXPECT_TRUE(lean_needs_string({"using namespace std::literals;"}));
  EXPECT_TRUE(lean_needs_string({"std::string_view"}));
  EXPECT_TRUE(lean_needs_string({"string"}));
}

TEST(LeanBuild, UnitsLeaveStringOutUnlessTheirSourcesNameIt) {
  Toolchain t;
  t.nvcc = "nvcc";
  LeanShim shim{"/cache/shim/mooreeval_lean_shim.so", "/lean/include", "/lean/shadow", "fp"};
  ExtensionSpec s = add_spec();
  s.cpp_sources = {"std::string label(torch::Tensor x);"};  // each unit's own sources decide
  s.cuda_sources = {"__global__ void k() {}"};
  auto steps = lean_build_steps(s, t, shim, "/work", "/work/ext.so");
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_FALSE(has(steps[0].argv, "-DMOOREEVAL_LEAN_NO_STRING"));
  EXPECT_TRUE(has(steps[1].argv, "-DMOOREEVAL_LEAN_NO_STRING"));
  s.cpp_sources = {"torch::Tensor add(torch::Tensor a, torch::Tensor b);"};
  s.cuda_sources.push_back("std::string label(torch::Tensor x) { return \"k\"; }");
  steps = lean_build_steps(s, t, shim, "/work", "/work/ext.so");
  EXPECT_TRUE(has(steps[0].argv, "-DMOOREEVAL_LEAN_NO_STRING"));
  EXPECT_FALSE(has(steps[1].argv, "-DMOOREEVAL_LEAN_NO_STRING"));
}

TEST(LeanBuild, StepsUseLeanHeadersAndLinkTheShim) {
  Toolchain t;
  t.include_paths_cpu = {"/torch/include", "/torch/include/api"};
  t.include_paths_cuda = {"/torch/include", "/torch/include/api", "/cuda/include"};
  t.python_include = "/python/include";
  t.nvcc = "nvcc";
  t.ldflags_cuda = {"-L/torch/lib", "-lc10", "-ltorch", "-L/cuda/lib64", "-lcudart"};
  LeanShim shim{"/cache/shim/mooreeval_lean_shim.so", "/lean/include", "/lean/shadow", "fp"};
  ExtensionSpec s = add_spec();
  s.cuda_sources = {"__global__ void k() {}"};
  auto steps = lean_build_steps(s, t, shim, "/work", "/work/ext.so");
  ASSERT_EQ(steps.size(), 3u);  // g++, nvcc, link
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(has(steps[i].argv, "/lean/shadow"));
    EXPECT_TRUE(has(steps[i].argv, "/cuda/include"));
    EXPECT_TRUE(has(steps[i].argv, "-DMOOREEVAL_LEAN_CUDA"));
    EXPECT_FALSE(has(steps[i].argv, "/torch/include"));
    EXPECT_FALSE(has(steps[i].argv, "/python/include"));
  }
  const auto& link = steps[2].argv;
  EXPECT_TRUE(has(link, "-l:mooreeval_lean_shim.so"));
  EXPECT_TRUE(has(link, "-Wl,-rpath,/cache/shim"));
  EXPECT_TRUE(has(link, "-Wl,--no-undefined"));
  EXPECT_TRUE(has(link, "-lcudart"));
  EXPECT_FALSE(has(link, "-ltorch"));
}

// A stand-in compiler that cannot compile lean sources that use "unsupported_api" (as the
// lean headers cannot compile an ATen call they do not declare), and counts its calls.
const char* kPickyCompiler = R"(#!/bin/sh
echo "$@" >> "$(dirname "$0")/calls.log"
for a in "$@"; do
  case "$a" in
    *main.cpp) if grep -q MOOREEVAL_LEAN_EXPORT "$a" && grep -q unsupported_api "$a"; then
                 echo "$a:2:1: error: 'unsupported_api' is not a member of 'at'" >&2; exit 1; fi
               if grep -q MOOREEVAL_LEAN_EXPORT "$a" && grep -q compiler_killed "$a"; then
                 echo "g++: fatal error: Killed signal terminated program cc1plus" >&2; exit 1; fi ;;
  esac
done
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then echo built > "$2"; fi
  shift
done
)";

struct FallbackFixture : ::testing::Test {
  void SetUp() override {
    auto d = TempDir::create("mc-lean-test-");
    ASSERT_TRUE(d.ok());
    dir.emplace(std::move(d).value());
    const fs::path compiler = dir->path() / "cxx";
    ASSERT_TRUE(write_file_atomic(compiler, kPickyCompiler).ok());
    ::chmod(compiler.c_str(), 0755);
    toolchain.cxx = compiler.string();
    shim = LeanShim{dir->path() / "shim" / "mooreeval_lean_shim.so", "/lean/include", "/lean/shadow", "fp"};
    options.cache_dir = dir->path() / "cache";
    options.lean_shim = &shim;
  }
  int calls() {
    auto log = read_file(dir->path() / "calls.log");
    return log.ok() ? static_cast<int>(std::count(log->begin(), log->end(), '\n')) : 0;
  }
  BuildReport build(const ExtensionSpec& s, const std::string& job) {
    fs::create_directories(dir->path() / job);
    return build_extensions({s}, toolchain, options, dir->path() / job);
  }
  std::optional<TempDir> dir;
  Toolchain toolchain;
  LeanShim shim;
  BuildOptions options;
};

TEST_F(FallbackFixture, LeanWhenItCompiles) {
  auto r = build(add_spec(), "job1");
  ASSERT_EQ(r.outcome, BuildOutcome::kOk) << r.log;
  EXPECT_EQ(r.path, "lean");
  ASSERT_EQ(r.extensions.size(), 1u);
  EXPECT_TRUE(r.extensions[0].lean);
  EXPECT_EQ(calls(), 2);  // compile + link
  auto again = build(add_spec(), "job2");
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.path, "lean");
  EXPECT_EQ(calls(), 2);
}

TEST_F(FallbackFixture, FullBuildWhenLeanDoesNotCompileAndTheFailureIsRemembered) {
  ExtensionSpec s = add_spec();
  s.cpp_sources.push_back("at::Tensor g(at::Tensor x) { return at::unsupported_api(x); }");
  auto r = build(s, "job1");
  ASSERT_EQ(r.outcome, BuildOutcome::kOk) << r.log;
  EXPECT_EQ(r.path, "full");
  EXPECT_FALSE(r.extensions[0].lean);
  EXPECT_NE(r.lean_note.find("unsupported_api"), std::string::npos) << r.lean_note;
  EXPECT_EQ(calls(), 3);          // failed lean compile, full compile, full link
  auto again = build(s, "job2");  // the full build is cached; lean is not tried again
  ASSERT_EQ(again.outcome, BuildOutcome::kOk);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.path, "full");
  EXPECT_EQ(calls(), 3);
}

// A lean compile that failed for want of memory (not because of its sources) is not
// remembered: the next build tries lean again, and takes the cached full build meanwhile.
TEST_F(FallbackFixture, ALeanFailureThatIsNotTheSourcesIsNotRemembered) {
  ExtensionSpec s = add_spec();
  s.cpp_sources.push_back("// compiler_killed");
  auto r = build(s, "job1");
  ASSERT_EQ(r.outcome, BuildOutcome::kOk) << r.log;
  EXPECT_EQ(r.path, "full");
  EXPECT_NE(r.lean_note.find("not remembered"), std::string::npos) << r.lean_note;
  EXPECT_EQ(calls(), 3);  // failed lean compile, full compile, full link
  auto again = build(s, "job2");
  ASSERT_EQ(again.outcome, BuildOutcome::kOk) << again.log;
  EXPECT_EQ(again.path, "full");
  EXPECT_EQ(calls(), 4);  // lean tried again; the full build came from the cache
  EXPECT_EQ(again.lean_note.find("failed before (cached)"), std::string::npos) << again.lean_note;
}

TEST(LeanBuild, FailuresOfTheSurroundingsAreToldFromTheSources) {
  auto d = TempDir::create("mc-lean-shadow-");
  ASSERT_TRUE(d.ok());
  const LeanShim shim{"/x/shim.so", "/x/include", d->path(), "fp"};
  fs::create_directories(d->path() / "torch");
  ASSERT_TRUE(write_file_atomic(d->path() / "torch/extension.h", "").ok());
  // The sources' own faults: remembered.
  EXPECT_EQ(lean_failure_not_the_sources("main.cpp:2:1: error: 'foo' is not a member of 'at'", shim), "");
  EXPECT_EQ(lean_failure_not_the_sources(
                "main.cpp:1:10: fatal error: ATen/cuda/CUDAContext.h: No such file or directory", shim),
            "");
  EXPECT_EQ(lean_failure_not_the_sources("main.o: undefined reference to `at::foo()'", shim), "");
  // The surroundings': not remembered.
  for (const char* log :
       {"main.cpp:3:10: fatal error: mooreeval_lean/bindings.h: No such file or directory",
        "main.cpp:1:10: fatal error: torch/extension.h: No such file or directory",
        "g++: fatal error: Killed signal terminated program cc1plus",
        "main.cpp:9: internal compiler error: Segmentation fault",
        "/usr/bin/ld: final link failed: No space left on device",
        "/usr/bin/ld: cannot find -l:mooreeval_lean_shim.so: No such file or directory",
        "$ g++ -Werror=return-type main.cpp\n[g++ exited with code 1]"})
    EXPECT_NE(lean_failure_not_the_sources(log, shim), "") << log;
}

// A full build in the cache does not stop auto from taking the lean path (deterministic
// build_path whatever the cache holds); the lean build then serves later requests.
TEST_F(FallbackFixture, CachedFullBuildDoesNotPreemptLean) {
  options.path = BuildPath::kFull;
  ASSERT_EQ(build(add_spec(), "job1").path, "full");
  options.path = BuildPath::kAuto;
  auto r = build(add_spec(), "job2");
  ASSERT_EQ(r.outcome, BuildOutcome::kOk) << r.log;
  EXPECT_EQ(r.path, "lean");
  EXPECT_FALSE(r.cache_hit);
  EXPECT_TRUE(build(add_spec(), "job3").cache_hit);
}

TEST_F(FallbackFixture, ForcedLeanPathReportsTheCompileError) {
  ExtensionSpec s = add_spec();
  s.cpp_sources.push_back("at::Tensor g(at::Tensor x) { return at::unsupported_api(x); }");
  options.path = BuildPath::kLean;
  auto r = build(s, "job1");
  EXPECT_EQ(r.outcome, BuildOutcome::kCompileError);
  EXPECT_NE(r.log.find("unsupported_api"), std::string::npos);
}

TEST_F(FallbackFixture, FullPathNeverTriesLean) {
  options.path = BuildPath::kFull;
  auto r = build(add_spec(), "job1");
  ASSERT_EQ(r.outcome, BuildOutcome::kOk) << r.log;
  EXPECT_EQ(r.path, "full");
}

TEST(LeanBuild, ParseBuildPath) {
  EXPECT_EQ(*parse_build_path("auto"), BuildPath::kAuto);
  EXPECT_EQ(*parse_build_path("lean"), BuildPath::kLean);
  EXPECT_EQ(*parse_build_path("full"), BuildPath::kFull);
  EXPECT_FALSE(parse_build_path("fast").ok());
}

}  // namespace
}  // namespace musacoder::build
