#include "build/toolchain.h"

#include "core/text.h"

namespace musacoder::build {

using nlohmann::json;

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::kCpu:
      return "cpu";
    case Backend::kCuda:
      return "cuda";
    case Backend::kMusa:
      return "musa";
  }
  return "?";
}

Result<Backend> parse_backend(const std::string& name) {
  if (name == "cpu") return Backend::kCpu;
  if (name == "cuda") return Backend::kCuda;
  if (name == "musa") return Backend::kMusa;
  return invalid_argument("unknown backend '" + name + "' (expected cpu, cuda or musa)");
}

Result<Toolchain> toolchain_from_probe(const json& probe) {
  Toolchain t;
  try {
    t.python = probe.at("python").get<std::string>();
    t.torch_version = probe.at("torch_version").get<std::string>();
    t.cxx = probe.at("cxx").get<std::string>();
    t.cxx_std = probe.at("cxx_std").get<std::string>();
    t.include_paths_cpu = probe.at("include_paths_cpu").get<std::vector<std::string>>();
    t.include_paths_cuda = probe.at("include_paths_cuda").get<std::vector<std::string>>();
    t.python_include = probe.at("python_include").get<std::string>();
    t.abi_flags = probe.at("abi_flags").get<std::vector<std::string>>();
    t.ldflags_cpu = probe.at("ldflags_cpu").get<std::vector<std::string>>();
    t.ldflags_cuda = probe.at("ldflags_cuda").get<std::vector<std::string>>();
    t.nvcc_common_flags = probe.at("nvcc_common_flags").get<std::vector<std::string>>();
    t.nvcc = probe.at("nvcc").get<std::string>();
    t.device_capabilities = probe.at("device_capabilities").get<std::vector<std::string>>();
    t.cuda_available = probe.at("cuda_available").get<bool>();
  } catch (const json::exception& e) {
    return internal_error(std::string("toolchain probe result is incomplete: ") + e.what());
  }
  return t;
}

std::string Toolchain::fingerprint() const {
  json j = {{"torch", torch_version},
            {"cxx", cxx},
            {"std", cxx_std},
            {"inc", include_paths_cpu},
            {"incu", include_paths_cuda},
            {"py", python_include},
            {"abi", abi_flags},
            {"ld", ldflags_cpu},
            {"ldu", ldflags_cuda},
            {"nvcc", nvcc},
            {"nvf", nvcc_common_flags},
            {"arch", cuda_arch_flags()}};
  return sha256_hex(j.dump());
}

std::vector<std::string> Toolchain::cuda_arch_flags() const {
  if (device_capabilities.empty()) return {};
  std::string cc = device_capabilities.front();
  cc.erase(std::remove(cc.begin(), cc.end(), '.'), cc.end());
  return {"-gencode=arch=compute_" + cc + ",code=sm_" + cc};
}

}  // namespace musacoder::build
