#include "mooreeval/compile/lean_build.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <set>
#include <string_view>

#include "mooreeval/compile/full_build.h"
#include "core/files.h"
#include "core/text.h"

namespace musacoder::build {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kShimName = "mooreeval_lean_shim";

// The CUDA toolkit's include directories: torch's cuda include list minus the cpu one.
std::vector<std::string> cuda_only_includes(const Toolchain& t) {
  std::vector<std::string> out;
  for (const auto& inc : t.include_paths_cuda)
    if (std::find(t.include_paths_cpu.begin(), t.include_paths_cpu.end(), inc) == t.include_paths_cpu.end())
      out.push_back(inc);
  return out;
}

bool contains(const std::vector<std::string>& sources, const std::string& needle) {
  return std::any_of(sources.begin(), sources.end(),
                     [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

bool lean_needs_string(const std::vector<std::string>& sources) {
  // clang-format off
  static const std::set<std::string_view> kNames = {
      "string", "wstring", "u8string", "u16string", "u32string", "basic_string", "string_view",
      "wstring_view", "u8string_view", "u16string_view", "u32string_view", "basic_string_view",
      "to_string", "to_wstring", "stoi", "stol", "stoul", "stoll", "stoull", "stof", "stod", "stold",
      "getline", "char_traits", "literals", "string_literals", "string_view_literals"};
  // clang-format on
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const std::string& s : sources)
    for (std::size_t i = 0; i < s.size();) {
      if (!ident(s[i])) {
        ++i;
        continue;
      }
      std::size_t end = i;
      while (end < s.size() && ident(s[end])) ++end;
      if (kNames.contains(std::string_view(s).substr(i, end - i))) return true;
      i = end;
    }
  return false;
}

Result<fs::path> locate_lean_dir(const std::string& explicit_dir) {
  fs::path dir;
  if (!explicit_dir.empty())
    dir = explicit_dir;
  else if (const char* env = std::getenv("MOOREEVAL_LEAN_DIR"); env && *env)
    dir = env;
  else
    dir = MOOREEVAL_SOURCE_LEAN_DIR;
  std::error_code ec;
  if (!fs::is_regular_file(dir / "shim.cpp", ec) ||
      !fs::is_directory(dir / "include" / "mooreeval_lean", ec) || !fs::is_directory(dir / "shadow", ec))
    return not_found(
        "lean build sources not found in " + dir.string() +
        " (expected shim.cpp, include/mooreeval_lean/, shadow/; set --lean-dir or MOOREEVAL_LEAN_DIR)");
  return fs::absolute(dir, ec);
}

Result<LeanShim> prepare_lean_shim(const Toolchain& toolchain, Backend backend, const fs::path& lean_dir,
                                   const BuildCache& cache, const fs::path& scratch_dir,
                                   std::chrono::milliseconds max_time) {
  if (backend == Backend::kMusa) return invalid_argument("the lean build path supports cpu and cuda");
  if (backend == Backend::kCuda && toolchain.nvcc.empty())
    return not_found("CUDA toolkit (nvcc) not found: no lean shim for the cuda backend");
  auto tree = hash_tree(lean_dir);
  if (!tree.ok()) return tree.status();
  LeanShim shim;
  shim.include_dir = lean_dir / "include";
  shim.shadow_dir = lean_dir / "shadow";
  shim.fingerprint = sha256_hex(*tree + "|" + toolchain.fingerprint() + "|" + backend_name(backend));
  const std::string key = "lean-shim-" + shim.fingerprint;
  const std::string lib_name = std::string(kShimName) + ".so";
  const auto start = Clock::now();
  const auto deadline = start + max_time;
  // The shim is not evicted like candidates' entries would be if it lived under their
  // key space: it is looked up once per process and its lock is held while building.
  if (auto hit = cache.lookup(key, lib_name)) {
    shim.library = *hit;
    return shim;
  }
  std::optional<KeyLock> lock;
  if (cache.enabled()) {
    lock.emplace(cache.dir(), key, deadline);
    if (lock->timed_out()) return internal_error("timed out waiting for a concurrent build of the lean shim");
    if (auto hit = cache.lookup(key, lib_name)) {
      shim.library = *hit;
      return shim;
    }
  }
  auto source = read_file(lean_dir / "shim.cpp");
  if (!source.ok()) return source.status();
  ExtensionSpec spec;
  spec.name = kShimName;
  spec.cpp_sources = {*source};
  spec.with_cuda = backend == Backend::kCuda ? 1 : 0;
  spec.extra_cflags = {"-O2", "-I" + shim.include_dir.string()};
  if (backend == Backend::kCuda) spec.extra_cflags.push_back("-DMOOREEVAL_LEAN_CUDA");
  spec.extra_ldflags = {"-Wl,-soname," + lib_name};
  const fs::path dir = scratch_dir / key;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return internal_error("cannot create " + dir.string() + ": " + ec.message());
  if (auto s = write_file_atomic(dir / "main.cpp", generated_cpp_source(spec)); !s.ok()) return s;
  std::vector<CompileStep> steps = full_build_steps(spec, toolchain, dir, dir / lib_name);
  const CompileStep link = steps.back();
  steps.pop_back();
  std::string log;
  const BuildOutcome o = run_compile_steps(steps, link, dir, deadline, /*sandbox=*/{}, log);
  if (o != BuildOutcome::kOk)
    return internal_error("building the lean shim failed (the lean path is off): " +
                          truncate_middle(log, 2000));
  shim.library = cache.publish(key, dir / lib_name);
  shim.build_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return shim;
}

std::string lean_unsuitable_reason(const ExtensionSpec& spec) {
  if (!spec.has_functions) return "no functions= list (the sources define their own bindings)";
  for (const auto& [fn, doc] : spec.functions)
    if (!is_identifier(fn)) return "function name '" + fn + "' is not a plain identifier";
  for (const char* marker :
       {"PYBIND11", "pybind11", "py::", "TORCH_LIBRARY", "torch/python.h", "torch/script.h"}) {
    if (contains(spec.cpp_sources, marker) || contains(spec.cuda_sources, marker))
      return std::string("the sources use ") + marker;
  }
  return "";
}

std::string lean_cpp_source(const ExtensionSpec& spec) {
  std::string out = spec.no_implicit_headers ? "" : "#include <torch/extension.h>\n";
  for (const auto& s : spec.cpp_sources) out += s + "\n";
  out += "#include <mooreeval_lean/bindings.h>\n";
  for (const auto& [fn, doc] : spec.functions) out += "MOOREEVAL_LEAN_EXPORT(" + fn + ")\n";
  return out;
}

std::vector<CompileStep> lean_build_steps(const ExtensionSpec& spec, const Toolchain& t, const LeanShim& shim,
                                          const fs::path& dir, const fs::path& library) {
  const bool cuda = uses_cuda(spec);
  // load_inline's flags with the torch and Python include directories replaced by the lean ones.
  std::vector<std::string> common = {"-DTORCH_EXTENSION_NAME=" + spec.name,
                                     "-DTORCH_API_INCLUDE_EXTENSION_H"};
  common.insert(common.end(), t.abi_flags.begin(), t.abi_flags.end());
  if (cuda) common.push_back("-DMOOREEVAL_LEAN_CUDA");
  for (const auto& inc : spec.extra_include_paths) common.push_back("-I" + fs::absolute(inc).string());
  for (const auto& inc : {shim.shadow_dir.string(), shim.include_dir.string()}) {
    common.push_back("-isystem");
    common.push_back(inc);
  }
  if (cuda)
    for (const auto& inc : cuda_only_includes(t)) {
      common.push_back("-isystem");
      common.push_back(inc);
    }
  std::vector<CompileStep> steps;
  std::vector<std::string> objects;
  CompileStep cxx{{t.cxx}};
  cxx.argv.insert(cxx.argv.end(), common.begin(), common.end());
  cxx.argv.push_back("-fPIC");
  cxx.argv.push_back("-std=" + t.cxx_std);
  cxx.argv.insert(cxx.argv.end(), spec.extra_cflags.begin(), spec.extra_cflags.end());
  if (!lean_needs_string(spec.cpp_sources)) cxx.argv.push_back("-DMOOREEVAL_LEAN_NO_STRING");
  cxx.argv.insert(cxx.argv.end(), {"-c", (dir / "main.cpp").string(), "-o", (dir / "main.o").string()});
  steps.push_back(cxx);
  objects.push_back((dir / "main.o").string());
  if (!spec.cuda_sources.empty()) {
    CompileStep nvcc{{t.nvcc}};
    nvcc.argv.insert(nvcc.argv.end(), common.begin(), common.end());
    nvcc.argv.insert(nvcc.argv.end(), t.nvcc_common_flags.begin(), t.nvcc_common_flags.end());
    bool user_arch = false, user_std = false;
    for (const auto& f : spec.extra_cuda_cflags) user_arch |= f.find("arch") != std::string::npos;
    if (!user_arch)
      for (const auto& f : t.cuda_arch_flags()) nvcc.argv.push_back(f);
    nvcc.argv.insert(nvcc.argv.end(), {"--compiler-options", "-fPIC"});
    for (const auto& f : spec.extra_cuda_cflags) {
      nvcc.argv.push_back(f);
      user_std |= f.starts_with("-std=");
    }
    if (!user_std) nvcc.argv.push_back("-std=" + t.cxx_std);
    if (!lean_needs_string(spec.cuda_sources)) nvcc.argv.push_back("-DMOOREEVAL_LEAN_NO_STRING");
    nvcc.argv.insert(nvcc.argv.end(),
                     {"-c", (dir / "cuda.cu").string(), "-o", (dir / "cuda.cuda.o").string()});
    steps.push_back(nvcc);
    objects.push_back((dir / "cuda.cuda.o").string());
  }
  // Link against the shim (found again through the rpath when Python loads the library),
  // the CUDA runtime, and nothing of torch; --no-undefined turns an ATen symbol the lean
  // headers do not provide into a link error (and so into the fallback), not a load error.
  CompileStep link{{t.cxx}};
  link.argv.insert(link.argv.end(), objects.begin(), objects.end());
  link.argv.push_back("-shared");
  link.argv.insert(link.argv.end(), spec.extra_ldflags.begin(), spec.extra_ldflags.end());
  const fs::path shim_dir = shim.library.parent_path();
  link.argv.insert(link.argv.end(), {"-L" + shim_dir.string(), "-l:" + shim.library.filename().string(),
                                     "-Wl,-rpath," + shim_dir.string(), "-Wl,--no-undefined"});
  if (cuda) {
    for (const auto& f : t.ldflags_cuda)
      if (f.starts_with("-L")) link.argv.push_back(f);
    link.argv.push_back("-lcudart");
  }
  link.argv.insert(link.argv.end(), {"-o", library.string()});
  steps.push_back(link);
  return steps;
}

std::string lean_cache_key(const std::string& full_key, const LeanShim& shim) {
  return sha256_hex("lean|" + full_key + "|" + shim.fingerprint);
}

}  // namespace musacoder::build
