#include "mooreeval/compile/toolchain.h"

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
    if (probe.contains("musa")) {
      const json& m = probe.at("musa");
      MusaProfile& p = t.musa;
      p.missing = m.value("missing", std::vector<std::string>{});
      p.musa_home = m.value("musa_home", "");
      p.mcc = m.value("mcc", "");
      p.sdk_version = m.value("sdk_version", "");
      p.torch_musa_version = m.value("torch_musa_version", "");
      p.cxx_std = m.value("cxx_std", "c++17");
      p.include_paths = m.value("include_paths", std::vector<std::string>{});
      p.ldflags = m.value("ldflags", std::vector<std::string>{});
      p.ldflags_cpu = m.value("ldflags_cpu", std::vector<std::string>{});
      p.mcc_flags = m.value("mcc_flags", std::vector<std::string>{});
      p.arch_flags = m.value("arch_flags", std::vector<std::string>{});
      p.device_names = m.value("device_names", std::vector<std::string>{});
      p.available = m.value("available", false);
    } else {
      t.musa.missing.push_back("a runner whose probe reports the MUSA toolchain");
    }
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
  if (!musa.mcc.empty())  // only where an SDK exists: CUDA cache keys stay as they were
    j["musa"] = {musa.mcc, musa.sdk_version, musa.torch_musa_version, musa.include_paths, musa.ldflags,
                 musa.mcc_flags, musa.arch_flags, musa.cxx_std};
  return sha256_hex(j.dump());
}

std::string musa_unavailable_reason(const Toolchain& t, const std::string& sdk_version,
                                    const std::string& torch_musa_version, bool need_device) {
  std::vector<std::string> why = t.musa.missing;
  if (!sdk_version.empty() && !t.musa.mcc.empty() && t.musa.sdk_version != sdk_version)
    why.push_back("MUSA SDK " + sdk_version + " (--musa-sdk-version), but " + t.musa.musa_home + " is " +
                  (t.musa.sdk_version.empty() ? "of unknown version" : t.musa.sdk_version));
  if (!torch_musa_version.empty() && !t.musa.torch_musa_version.empty() &&
      !t.musa.torch_musa_version.starts_with(torch_musa_version))
    why.push_back("torch_musa " + torch_musa_version + " (--torch-musa), but " + t.musa.torch_musa_version +
                  " is installed");
  if (need_device && why.empty() && !t.musa.available)
    why.push_back("a MUSA GPU (torch_musa sees none: check /dev/mtgpu* and the MT driver)");
  if (why.empty()) return "";
  std::string s = "the musa backend needs ";
  for (std::size_t i = 0; i < why.size(); ++i) s += (i ? "; " : "") + why[i];
  return s;
}

std::vector<std::string> Toolchain::cuda_arch_flags() const {
  if (device_capabilities.empty()) return {};
  std::string cc = device_capabilities.front();
  cc.erase(std::remove(cc.begin(), cc.end(), '.'), cc.end());
  return {"-gencode=arch=compute_" + cc + ",code=sm_" + cc};
}

}  // namespace musacoder::build
