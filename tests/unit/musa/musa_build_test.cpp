// --backend musa's build with a fake MUSA SDK: a fake mcc and c++ on disk record their arguments, a fake
// torch_musa package sits on PYTHONPATH, and the runner's probe (devices.musa_profile) describes them. The
// recorded command lines must be torch_musa.utils.musa_extension's JIT build (its include_paths(True),
// _prepare_ldflags, -fPIC, -std=c++17), spelled out here from torch_musa's source, not from our code.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "mooreeval/compile/extension_build.h"
#include "core/files.h"
#include "process/subprocess.h"
#include "sandbox/host_layout.h"

namespace musacoder::build {
namespace {

namespace fs = std::filesystem;
const fs::path kSource = MUSACODER_SOURCE_DIR;

constexpr const char* kRecorder = R"SH(#!/bin/sh
if [ "$1" = "--version" ]; then echo "mcc version 5.1.0 (fake MUSA SDK for tests)"; exit 0; fi
{ echo "---"; for a in "$@"; do echo "$a"; done; } >> "$0.log"
prev=""; for a in "$@"; do [ "$prev" = "-o" ] && : > "$a"; prev="$a"; done
exit 0
)SH";

std::vector<std::vector<std::string>> invocations(const fs::path& tool) {
  std::vector<std::vector<std::string>> out;
  auto text = read_file(tool.string() + ".log");
  if (!text.ok()) return out;
  std::size_t start = 0;
  while (start < text->size()) {
    std::size_t end = text->find('\n', start);
    const std::string line = text->substr(start, end - start);
    start = end == std::string::npos ? text->size() : end + 1;
    if (line == "---")
      out.emplace_back();
    else if (!out.empty())
      out.back().push_back(line);
  }
  return out;
}

struct FakeSdk {
  fs::path root, home, site, mcc, cxx;
};

FakeSdk make_fake_sdk() {
  FakeSdk f;
  f.root = fs::temp_directory_path() / ("musa_fake_sdk_" + std::to_string(getpid()));
  f.home = f.root / "musa";
  f.site = f.root / "site";
  fs::create_directories(f.home / "bin");
  fs::create_directories(f.home / "lib64");
  fs::create_directories(f.site / "torch_musa" / "lib");
  f.mcc = f.home / "bin" / "mcc";
  f.cxx = f.root / "fake-c++";
  for (const auto& tool : {f.mcc, f.cxx}) {
    EXPECT_TRUE(write_file_atomic(tool, kRecorder).ok());
    fs::permissions(tool, fs::perms::owner_all);
  }
  EXPECT_TRUE(write_file_atomic(f.site / "torch_musa" / "__init__.py", "").ok());
  EXPECT_TRUE(write_file_atomic(f.site / "torch_musa" / "version.py", "__version__ = \"2.9.0\"\n").ok());
  return f;
}

// The runner's MUSA profile of this environment, in the probe's JSON.
nlohmann::json musa_profile(const std::map<std::string, std::string>& env) {
  ProcessOptions o;
  o.argv = {"python3", "-c",
            "import json, sys; sys.path.insert(0, sys.argv[1]); from mooreeval_runner import devices; "
            "print(json.dumps(devices.musa_profile()))",
            (kSource / "python").string()};
  o.env_set = env;
  o.env_unset = {"MUSA_PATH", "PYTORCH_MCC"};
  o.deadline = std::chrono::seconds(120);
  auto r = run_process(o);
  EXPECT_TRUE(r.ok() && r->succeeded()) << (r.ok() ? r->stderr_text : r.status().to_string());
  return r.ok() ? nlohmann::json::parse(r->stdout_text) : nlohmann::json::object();
}

Toolchain toolchain_with(const nlohmann::json& musa, const fs::path& cxx) {
  Toolchain t;
  t.cxx = cxx.string();
  t.python_include = "/py/include";
  t.abi_flags = {"-DPYBIND11_COMPILER_TYPE=\"_gcc\"", "-D_GLIBCXX_USE_CXX11_ABI=1"};
  nlohmann::json probe = {{"python", "python3"}, {"torch_version", "2.9.0"}, {"cxx", t.cxx}, {"cxx_std", "c++17"},
                          {"include_paths_cpu", nlohmann::json::array()}, {"include_paths_cuda", nlohmann::json::array()},
                          {"python_include", "/py/include"}, {"abi_flags", t.abi_flags},
                          {"ldflags_cpu", nlohmann::json::array()}, {"ldflags_cuda", nlohmann::json::array()},
                          {"nvcc_common_flags", nlohmann::json::array()}, {"nvcc", ""},
                          {"device_capabilities", nlohmann::json::array()}, {"cuda_available", false},
                          {"musa", musa}};
  auto parsed = toolchain_from_probe(probe);
  EXPECT_TRUE(parsed.ok());
  return parsed.ok() ? *parsed : t;
}

TEST(MusaBuild, FakeMccGetsTorchMusaJitCommandLine) {
  const FakeSdk f = make_fake_sdk();
  const nlohmann::json profile = musa_profile(
      {{"MUSA_HOME", f.home.string()}, {"PYTHONPATH", f.site.string()}, {"TORCH_MUSA_ARCH_LIST", "31"}});
  ASSERT_TRUE(profile.at("missing").empty()) << profile.dump(1);
  EXPECT_EQ(profile.at("sdk_version"), "5.1.0");
  EXPECT_EQ(profile.at("torch_musa_version"), "2.9.0");
  const Toolchain t = toolchain_with(profile, f.cxx);
  EXPECT_EQ(musa_unavailable_reason(t, "5.1.0", "2.9.0", false), "");
  EXPECT_NE(musa_unavailable_reason(t, "4.3.0", "", false).find("MUSA SDK 4.3.0 (--musa-sdk-version), but"),
            std::string::npos);
  EXPECT_NE(musa_unavailable_reason(t, "", "", true).find("a MUSA GPU"), std::string::npos);

  ExtensionSpec spec;
  spec.name = "ext";
  spec.cpp_sources = {"torch::Tensor f(torch::Tensor x);"};
  spec.cuda_sources = {"__global__ void k() {}\ntorch::Tensor f(torch::Tensor x) { cudaGetLastError(); return x; }"};
  spec.has_functions = true;
  spec.functions = {{"f", "f"}};
  spec.extra_cuda_cflags = {"-O3"};
  BuildOptions o;
  o.backend = Backend::kMusa;
  const fs::path work = f.root / "work";
  const BuildReport r = build_extensions({spec}, t, o, work);
  ASSERT_EQ(r.outcome, BuildOutcome::kOk) << r.log;
  const fs::path dir = work / "ext0_ext";
  const std::string s = f.site.string(), h = f.home.string();
  // torch_musa's common_cflags: name defines, pybind11 ABI, -isystem include_paths(True) + python, glibcxx ABI.
  const std::vector<std::string> common = {
      "-DTORCH_EXTENSION_NAME=ext", "-DTORCH_API_INCLUDE_EXTENSION_H", "-DPYBIND11_COMPILER_TYPE=\"_gcc\"",
      "-isystem", "/usr/local/musa/include",
      "-isystem", s + "/torch_musa/share/generated_cuda_compatible/aten/src",
      "-isystem", s + "/torch_musa/share/generated_cuda_compatible/include",
      "-isystem", s + "/torch_musa/share/generated_cuda_compatible/include/torch/csrc/api/include",
      "-isystem", s + "/torch_musa/share/torch_musa_codegen",
      "-isystem", s,
      "-isystem", h + "/include",
      "-isystem", "/py/include",  // the toolchain's python include
      "-D_GLIBCXX_USE_CXX11_ABI=1"};
  std::vector<std::string> mcc = common;
  for (const char* a : {"-fPIC", "-O3", "-std=c++17", "-c"}) mcc.push_back(a);
  for (const std::string& a : {(dir / "musa.mu").string(), std::string("-o"), (dir / "musa.musa.o").string(),
                              std::string("--offload-arch=mp_31")})
    mcc.push_back(a);
  const auto mcc_calls = invocations(f.mcc);
  ASSERT_EQ(mcc_calls.size(), 1u);
  EXPECT_EQ(mcc_calls[0], mcc);
  const auto cxx_calls = invocations(f.cxx);
  ASSERT_EQ(cxx_calls.size(), 2u);
  std::vector<std::string> cxx = common;
  for (const std::string& a : {std::string("-fPIC"), std::string("-std=c++17"), std::string("-c"),
                              (dir / "main.cpp").string(), std::string("-o"), (dir / "main.o").string()})
    cxx.push_back(a);
  EXPECT_EQ(cxx_calls[0], cxx);
  // _prepare_ldflags(with_musa=True): torch, torch_musa's lib, musart from $MUSA_HOME/lib64.
  const auto& link = cxx_calls[1];
  const std::string torch_lib = profile.at("ldflags").at(0).get<std::string>();
  const std::vector<std::string> expected_link = {
      (dir / "main.o").string(), (dir / "musa.musa.o").string(), "-shared", torch_lib, "-lc10", "-ltorch_cpu",
      "-L" + s + "/torch_musa/lib", "-ltorch", "-ltorch_python", "-lmusa_python", "-lmusa_kernels",
      "-L" + h + "/lib64", "-lmusart", "-o", (dir / "ext.so").string()};
  EXPECT_EQ(link, expected_link);
  EXPECT_TRUE(torch_lib.starts_with("-L") && torch_lib.ends_with("/torch/lib")) << torch_lib;
  // musa.mu: torch_musa's prologue and the CUDA source ported by torchada's rules.
  const std::string mu = *read_file(dir / "musa.mu");
  EXPECT_TRUE(mu.starts_with("#include <torch/types.h>\n#include <musa.h>\n#include <musa_runtime.h>\n")) << mu;
  EXPECT_NE(mu.find("musaGetLastError();"), std::string::npos) << mu;
  fs::remove_all(f.root);
}

TEST(MusaBuild, WithoutTheSdkTheErrorNamesWhatIsMissing) {
  const fs::path empty = fs::temp_directory_path() / ("musa_no_sdk_" + std::to_string(getpid()));
  fs::create_directories(empty);
  const nlohmann::json profile = musa_profile({{"MUSA_HOME", (empty / "nowhere").string()},
                                               {"PATH", "/usr/bin:/bin"}, {"PYTHONPATH", empty.string()}});
  const Toolchain t = toolchain_with(profile, "c++");
  const std::string why = musa_unavailable_reason(t, "5.1.0", "2.9.0", true);
  EXPECT_NE(why.find("mcc (MUSA compiler) at " + (empty / "nowhere/bin/mcc").string()), std::string::npos) << why;
  EXPECT_NE(why.find("torch_musa in the runner's Python"), std::string::npos) << why;
  ExtensionSpec spec;
  spec.name = "ext";
  spec.cuda_sources = {"__global__ void k() {}"};
  BuildOptions o;
  o.backend = Backend::kMusa;
  const BuildReport r = build_extensions({spec}, t, o, empty / "work");
  EXPECT_EQ(r.outcome, BuildOutcome::kInfraError);
  EXPECT_NE(r.log.find("mcc (MUSA compiler)"), std::string::npos) << r.log;
  fs::remove_all(empty);
}

// A MUSA job's sandbox gets /dev/mtgpu* and /dev/dri; without the MT driver the error names the node.
TEST(MusaSandbox, DeviceNodes) {
  bool have_mtgpu = false;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec))
    have_mtgpu |= e.path().filename().string().starts_with("mtgpu");
  auto nodes = sandbox::musa_device_nodes();
  if (!have_mtgpu) {
    ASSERT_FALSE(nodes.ok());
    EXPECT_NE(nodes.status().message().find("no /dev/mtgpu*"), std::string::npos) << nodes.status().message();
    return;
  }
  ASSERT_TRUE(nodes.ok()) << nodes.status().to_string();
  EXPECT_EQ(nodes->back(), fs::path("/dev/dri"));
}

}  // namespace
}  // namespace musacoder::build
