// The toolchain profile: compilers, include and library paths, and the exact flags that
// torch.utils.cpp_extension would use, as reported once by the runner's `probe` mode.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::build {

enum class Backend { kCpu, kCuda, kMusa };

const char* backend_name(Backend b);
Result<Backend> parse_backend(const std::string& name);

struct Toolchain {
  std::string python;  // interpreter the runner uses
  std::string torch_version;
  std::string cxx = "c++";
  std::string cxx_std = "c++17";  // the -std torch's JIT builder passes
  std::vector<std::string> include_paths_cpu, include_paths_cuda;
  std::string python_include;
  std::vector<std::string> abi_flags;  // pybind11 / glibcxx ABI defines
  std::vector<std::string> ldflags_cpu, ldflags_cuda;
  std::vector<std::string> nvcc_common_flags;
  std::string nvcc;                              // empty when no CUDA toolkit
  std::vector<std::string> device_capabilities;  // "9.0" per visible GPU
  bool cuda_available = false;

  // Identifies everything that changes a build's output (for the build cache key).
  std::string fingerprint() const;
  // -gencode flags for the first visible GPU ("" arch list -> empty).
  std::vector<std::string> cuda_arch_flags() const;
};

// Parses the probe result. Errors name the missing field.
Result<Toolchain> toolchain_from_probe(const nlohmann::json& probe);

}  // namespace musacoder::build
