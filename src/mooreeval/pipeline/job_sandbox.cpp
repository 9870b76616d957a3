#include "mooreeval/pipeline/job_sandbox.h"

#include <sys/stat.h>

#include <set>

#include "sandbox/host_layout.h"

namespace musacoder::eval {

namespace fs = std::filesystem;

Result<JobDirs> make_job_dirs(const fs::path& root) {
  JobDirs d{fs::absolute(root), {}, {}, {}};
  d.inspect = d.root / "inspect";
  d.reference = d.root / "reference";
  d.candidate = d.root / "candidate";
  for (const auto& p : {d.inspect, d.reference, d.candidate}) {
    std::error_code ec;
    fs::create_directories(p, ec);
    if (ec) return internal_error("cannot create " + p.string() + ": " + ec.message());
  }
  if (::chmod(d.root.c_str(), 0711) != 0) return internal_error("cannot chmod " + d.root.string());
  return d;
}

std::vector<fs::path> compiler_prefixes(const build::Toolchain& t) {
  std::set<fs::path> dirs;
  std::string cxx = t.cxx;
  if (!cxx.empty() && cxx.find('/') == std::string::npos) cxx = sandbox::find_program(cxx);
  if (cxx.empty()) return {};
  std::error_code ec;
  for (const fs::path& binary : {fs::path(cxx), fs::weakly_canonical(cxx, ec)}) {
    if (binary.empty() || !binary.is_absolute()) continue;
    // <prefix>/bin/g++: the prefix holds cc1plus, the headers and libstdc++ of that compiler.
    const fs::path prefix = binary.lexically_normal().parent_path().parent_path();
    if (prefix.empty() || prefix == "/" || prefix == "/usr" || prefix.string().starts_with("/usr/")) continue;
    std::error_code ec2;
    if (fs::is_directory(prefix, ec2)) dirs.insert(prefix);
  }
  return {dirs.begin(), dirs.end()};
}

std::vector<fs::path> toolchain_read_only(const build::Toolchain& t) {
  std::set<fs::path> dirs;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    if (p.is_absolute() && fs::is_directory(p, ec)) dirs.insert(p.lexically_normal());
  };
  for (const auto& p : compiler_prefixes(t)) add(p);
  for (const auto& p : t.include_paths_cpu) add(p);
  for (const auto& p : t.include_paths_cuda) add(p);
  add(t.python_include);
  for (const auto* flags : {&t.ldflags_cpu, &t.ldflags_cuda})
    for (const auto& f : *flags)
      if (f.starts_with("-L")) add(f.substr(2));
  if (!t.nvcc.empty()) add(fs::path(t.nvcc).parent_path().parent_path());  // CUDA_HOME
  return {dirs.begin(), dirs.end()};
}

}  // namespace musacoder::eval
