// The build stage: compiles the extensions a candidate passes to load_inline, with the
// same generated sources and flags as torch.utils.cpp_extension.load_inline, in an
// isolated directory, under a deadline, with a content-addressed cache.
//
// Thread-safety: build_extensions() may run concurrently, also from several processes
// sharing one cache directory: a per-key file lock makes concurrent requests for the
// same key build once, and entries appear by atomic rename.
#pragma once

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "build/toolchain.h"
#include "core/status.h"

namespace musacoder::build {

struct BuildOptions {
  Backend backend = Backend::kCpu;
  std::chrono::milliseconds max_build_time{60000};  // --max-build-seconds, for all extensions together
  std::filesystem::path cache_dir;                  // empty: no cache
  std::size_t max_log_bytes = 64 << 10;             // compiler output kept per build
};

// One load_inline call, as recorded by the runner's inspect mode.
struct ExtensionSpec {
  std::string name;
  std::vector<std::string> cpp_sources, cuda_sources;
  bool has_functions = false;
  std::vector<std::pair<std::string, std::string>> functions;  // name -> docstring
  std::vector<std::string> extra_cflags, extra_cuda_cflags, extra_ldflags, extra_include_paths;
  int with_cuda = -1;  // -1: decide from cuda_sources (load_inline's None)
  bool with_pytorch_error_handling = true;
  bool no_implicit_headers = false;
};

Result<ExtensionSpec> extension_spec_from_json(const nlohmann::json& j);

struct BuiltExtension {
  std::string name;
  std::filesystem::path library;  // the .so to import
};

enum class BuildOutcome { kOk, kCompileError, kTimeout, kInfraError };

struct BuildReport {
  BuildOutcome outcome = BuildOutcome::kOk;
  std::vector<BuiltExtension> extensions;
  std::string log;         // compiler output (truncated), or the reason for kInfraError
  bool cache_hit = false;  // every extension came from the cache
  double seconds = 0.0;
};

// The generated main.cpp / cuda.cu texts, exactly as load_inline writes them.
std::string generated_cpp_source(const ExtensionSpec& spec);
std::string generated_cuda_source(const ExtensionSpec& spec);

// Compiles every spec into `work_dir`. Never fails with a Status: the outcome says whose
// fault a failure is (a missing compiler is kInfraError, a bad source kCompileError).
BuildReport build_extensions(const std::vector<ExtensionSpec>& specs, const Toolchain& toolchain,
                             const BuildOptions& options, const std::filesystem::path& work_dir);

}  // namespace musacoder::build
