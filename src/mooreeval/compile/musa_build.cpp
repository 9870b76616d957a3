#include "mooreeval/compile/musa_build.h"

#include "musa/musa.h"

namespace musacoder::build {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> ported(const std::vector<std::string>& sources) {
  std::vector<std::string> out;
  for (const auto& s : sources) out.push_back(musa::apply_torchada_rules(s));
  return out;
}

bool is_glibcxx_flag(const std::string& f) { return f.starts_with("-D_GLIBCXX_USE_CXX11_ABI"); }

// musa_extension's common_cflags: name defines, pybind11 ABI, -I user, -isystem system, glibcxx ABI.
std::vector<std::string> musa_common_cflags(const ExtensionSpec& spec, const Toolchain& t) {
  std::vector<std::string> f = {"-DTORCH_EXTENSION_NAME=" + spec.name, "-DTORCH_API_INCLUDE_EXTENSION_H"};
  for (const auto& a : t.abi_flags)
    if (!is_glibcxx_flag(a)) f.push_back(a);
  for (const auto& inc : spec.extra_include_paths) f.push_back("-I" + fs::absolute(inc).string());
  std::vector<std::string> system = t.musa.include_paths;
  system.push_back(t.python_include);
  for (const auto& inc : system) {
    f.push_back("-isystem");
    f.push_back(inc);
  }
  for (const auto& a : t.abi_flags)
    if (is_glibcxx_flag(a)) f.push_back(a);
  return f;
}

}  // namespace

std::string generated_musa_cpp_source(const ExtensionSpec& spec) {
  ExtensionSpec s = spec;
  s.cpp_sources = ported(spec.cpp_sources);
  return generated_cpp_source(s);
}

std::string generated_musa_source(const ExtensionSpec& spec) {
  std::vector<std::string> parts = {"#include <torch/types.h>", "#include <musa.h>", "#include <musa_runtime.h>"};
  for (auto& s : ported(spec.cuda_sources)) parts.push_back(std::move(s));
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "\n" : "") + parts[i];
  return out;
}

std::vector<CompileStep> musa_build_steps(const ExtensionSpec& spec, const Toolchain& t, const fs::path& dir,
                                          const fs::path& library) {
  const std::vector<std::string> common = musa_common_cflags(spec, t);
  std::vector<CompileStep> steps;
  CompileStep cxx{{t.cxx}};
  cxx.argv.insert(cxx.argv.end(), common.begin(), common.end());
  cxx.argv.insert(cxx.argv.end(), {"-fPIC", "-std=" + t.musa.cxx_std});
  cxx.argv.insert(cxx.argv.end(), spec.extra_cflags.begin(), spec.extra_cflags.end());
  cxx.argv.insert(cxx.argv.end(), {"-c", (dir / "main.cpp").string(), "-o", (dir / "main.o").string()});
  steps.push_back(cxx);
  std::vector<std::string> objects = {(dir / "main.o").string()};
  const bool with_musa = uses_cuda(spec);
  if (!spec.cuda_sources.empty()) {
    CompileStep mcc{{t.musa.mcc}};
    mcc.argv.insert(mcc.argv.end(), common.begin(), common.end());
    mcc.argv.insert(mcc.argv.end(), t.musa.mcc_flags.begin(), t.musa.mcc_flags.end());
    mcc.argv.push_back("-fPIC");
    bool user_std = false, user_arch = false;
    for (const auto& f : spec.extra_cuda_cflags) {
      mcc.argv.push_back(f);
      user_std |= f.starts_with("-std=");
      user_arch |= f.find("offload-arch") != std::string::npos;
    }
    if (!user_std) mcc.argv.push_back("-std=" + t.musa.cxx_std);
    mcc.argv.insert(mcc.argv.end(), {"-c", (dir / "musa.mu").string(), "-o", (dir / "musa.musa.o").string()});
    if (!user_arch) mcc.argv.insert(mcc.argv.end(), t.musa.arch_flags.begin(), t.musa.arch_flags.end());
    steps.push_back(mcc);
    objects.push_back((dir / "musa.musa.o").string());
  }
  CompileStep link{{t.cxx}};
  link.argv.insert(link.argv.end(), objects.begin(), objects.end());
  link.argv.push_back("-shared");
  link.argv.insert(link.argv.end(), spec.extra_ldflags.begin(), spec.extra_ldflags.end());
  const auto& ld = with_musa ? t.musa.ldflags : t.musa.ldflags_cpu;
  link.argv.insert(link.argv.end(), ld.begin(), ld.end());
  link.argv.insert(link.argv.end(), {"-o", library.string()});
  steps.push_back(link);
  return steps;
}

}  // namespace musacoder::build
