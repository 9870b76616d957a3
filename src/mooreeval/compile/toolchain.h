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

// The MUSA side of the profile (runner: devices.musa_profile()): torch_musa.utils.musa_extension's JIT
// build for load_inline's musa sources, compiled by mcc from the MUSA SDK.
struct MusaProfile {
  std::string musa_home;          // MUSA_HOME / MUSA_PATH / the mcc on PATH / /usr/local/musa
  std::string mcc;                // $MUSA_HOME/bin/mcc (or PYTORCH_MCC); empty when absent
  std::string sdk_version;        // "5.1.0"; empty when unknown
  std::string torch_musa_version; // "2.9.0"; empty when torch_musa is not installed
  std::string cxx_std = "c++17";  // torch_musa's JIT builder always passes -std=c++17
  std::vector<std::string> include_paths;  // musa_extension.include_paths(musa=True)
  std::vector<std::string> ldflags;        // musa_extension._prepare_ldflags(with_musa=True)
  std::vector<std::string> ldflags_cpu;    // musa_extension._prepare_ldflags(with_musa=False)
  std::vector<std::string> mcc_flags;      // musa_extension.COMMON_MCC_FLAGS
  std::vector<std::string> arch_flags;     // --offload-arch=mp_XX per visible device / TORCH_MUSA_ARCH_LIST
  std::vector<std::string> device_names;
  std::vector<std::string> missing;        // what the probe could not find, in words
  bool available = false;                  // torch.musa.is_available()
};

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
  MusaProfile musa;

  // Identifies everything that changes a build's output (for the build cache key).
  std::string fingerprint() const;
  // -gencode flags for the first visible GPU ("" arch list -> empty).
  std::vector<std::string> cuda_arch_flags() const;
};

// "" when the musa backend can build (and, with `need_device`, run) with this toolchain, else a sentence
// naming everything missing: the SDK, mcc, torch_musa, a device, or a version other than the one asked
// for (`sdk_version` / `torch_musa_version`, empty: any).
std::string musa_unavailable_reason(const Toolchain& t, const std::string& sdk_version,
                                    const std::string& torch_musa_version, bool need_device);

// Parses the probe result. Errors name the missing field.
Result<Toolchain> toolchain_from_probe(const nlohmann::json& probe);

}  // namespace musacoder::build
