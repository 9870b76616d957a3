#include "mooreeval/compile/full_build.h"

#include "core/text.h"

namespace musacoder::build {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> common_cflags(const ExtensionSpec& spec, const Toolchain& t, bool cuda) {
  std::vector<std::string> f = {"-DTORCH_EXTENSION_NAME=" + spec.name, "-DTORCH_API_INCLUDE_EXTENSION_H"};
  f.insert(f.end(), t.abi_flags.begin(), t.abi_flags.end());
  for (const auto& inc : spec.extra_include_paths) f.push_back("-I" + fs::absolute(inc).string());
  for (const auto& inc : cuda ? t.include_paths_cuda : t.include_paths_cpu) {
    f.push_back("-isystem");
    f.push_back(inc);
  }
  f.push_back("-isystem");
  f.push_back(t.python_include);
  return f;
}

std::vector<CompileStep> full_build_steps(const ExtensionSpec& spec, const Toolchain& t, const fs::path& dir,
                                          const fs::path& library) {
  const bool cuda = uses_cuda(spec);
  std::vector<CompileStep> cmds;
  std::vector<std::string> objects;
  CompileStep cxx{{t.cxx}};
  for (auto& f : common_cflags(spec, t, cuda)) cxx.argv.push_back(f);
  cxx.argv.push_back("-fPIC");
  cxx.argv.push_back("-std=" + t.cxx_std);
  for (auto& f : spec.extra_cflags) cxx.argv.push_back(f);
  cxx.argv.insert(cxx.argv.end(), {"-c", (dir / "main.cpp").string(), "-o", (dir / "main.o").string()});
  cmds.push_back(cxx);
  objects.push_back((dir / "main.o").string());
  if (!spec.cuda_sources.empty()) {
    CompileStep nvcc{{t.nvcc}};
    for (auto& f : common_cflags(spec, t, true)) nvcc.argv.push_back(f);
    for (auto& f : t.nvcc_common_flags) nvcc.argv.push_back(f);
    bool user_arch = false;
    for (auto& f : spec.extra_cuda_cflags) user_arch |= f.find("arch") != std::string::npos;
    if (!user_arch)
      for (auto& f : t.cuda_arch_flags()) nvcc.argv.push_back(f);
    nvcc.argv.insert(nvcc.argv.end(), {"--compiler-options", "-fPIC"});
    bool user_std = false;
    for (auto& f : spec.extra_cuda_cflags) {
      nvcc.argv.push_back(f);
      user_std |= f.starts_with("-std=");
    }
    if (!user_std) nvcc.argv.push_back("-std=" + t.cxx_std);
    nvcc.argv.insert(nvcc.argv.end(),
                     {"-c", (dir / "cuda.cu").string(), "-o", (dir / "cuda.cuda.o").string()});
    cmds.push_back(nvcc);
    objects.push_back((dir / "cuda.cuda.o").string());
  }
  CompileStep link{{t.cxx}};
  link.argv.insert(link.argv.end(), objects.begin(), objects.end());
  link.argv.push_back("-shared");
  for (auto& f : spec.extra_ldflags) link.argv.push_back(f);
  for (auto& f : cuda ? t.ldflags_cuda : t.ldflags_cpu) link.argv.push_back(f);
  link.argv.insert(link.argv.end(), {"-o", library.string()});
  cmds.push_back(link);
  return cmds;
}

std::string full_cache_key(const ExtensionSpec& spec, const Toolchain& t, Backend backend) {
  json j = {{"v", 1},
            {"backend", backend_name(backend)},
            {"toolchain", t.fingerprint()},
            {"name", spec.name},
            {"cpp", generated_cpp_source(spec)},
            {"cu", generated_cuda_source(spec)},
            {"cflags", spec.extra_cflags},
            {"cuflags", spec.extra_cuda_cflags},
            {"ldflags", spec.extra_ldflags},
            {"inc", spec.extra_include_paths},
            {"with_cuda", spec.with_cuda}};
  return sha256_hex(j.dump());
}

}  // namespace musacoder::build
