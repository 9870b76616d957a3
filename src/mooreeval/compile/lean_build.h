// The lean build path: a KernelBench-style extension compiled against the lean tensor
// headers (src/mooreeval/compile/lean/include, with stand-ins for <torch/extension.h> and friends in
// src/mooreeval/compile/lean/shadow) instead of torch's, linked to a shim library that is built once
// per toolchain with the real headers and forwards every tensor operation to ATen.
//
// Why: nvcc of a translation unit that includes torch/types.h takes ~30 s and g++ of
// torch/extension.h ~25 s; the same sources against the lean headers compile in ~1-3 s.
// What users see is unchanged: the runner turns the library into a module whose functions
// convert arguments with pybind11's casters and report errors as torch's
// wrap_pybind_function does. A source that the lean headers cannot compile (an ATen call
// they do not declare, pybind11 code, half-precision types) falls back to the full build.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "mooreeval/compile/build_cache.h"
#include "mooreeval/compile/compile_steps.h"
#include "mooreeval/compile/extension_spec.h"
#include "mooreeval/compile/toolchain.h"
#include "core/status.h"

namespace musacoder::build {

// The shim library and headers one toolchain's lean builds use.
struct LeanShim {
  std::filesystem::path library;      // mooreeval_lean_shim.so (also a Python module)
  std::filesystem::path include_dir;  // mooreeval_lean/*.h
  std::filesystem::path shadow_dir;   // torch/extension.h, ATen/ATen.h, ... stand-ins
  std::string fingerprint;            // shim sources + headers + toolchain + backend
  double build_seconds = 0.0;         // 0 when it came from the cache
};

// Where the lean sources live: `explicit_dir`, else $MOOREEVAL_LEAN_DIR, else the source
// tree's src/mooreeval/compile/lean (compiled in). Fails if shim.cpp or the headers are missing.
Result<std::filesystem::path> locate_lean_dir(const std::string& explicit_dir);

// Builds the shim for `backend` (cpu or cuda), or finds it in `cache` (key: fingerprint).
// Without a cache it is built into `scratch_dir`, which must outlive its users. Takes a
// while (a full torch/extension.h compile), so it runs once, before any candidate.
Result<LeanShim> prepare_lean_shim(const Toolchain& toolchain, Backend backend,
                                   const std::filesystem::path& lean_dir, const BuildCache& cache,
                                   const std::filesystem::path& scratch_dir,
                                   std::chrono::milliseconds max_time);

// Why `spec` cannot take the lean path at all ("" when it can try): no functions= list
// (the sources bind themselves), pybind11 or TORCH_LIBRARY code.
std::string lean_unsuitable_reason(const ExtensionSpec& spec);

// Whether a translation unit of `sources` may use std::string and so needs the <string> that
// torch's headers include: true when some identifier in them is a <string> name (string,
// string_view, to_string, stoi, getline, char_traits, literals, ...; comments count too).
// Each lean translation unit is compiled without <string> otherwise (nvcc spends a fifth of
// its time on that header, g++ a third); a source that needs it anyway fails to compile and
// takes the full build.
bool lean_needs_string(const std::vector<std::string>& sources);

// The lean translation units: main.cpp (cpp_sources + one MOOREEVAL_LEAN_EXPORT per
// function) and, with CUDA sources, cuda.cu (exactly load_inline's).
std::string lean_cpp_source(const ExtensionSpec& spec);

// Compile steps (g++ main.cpp, nvcc cuda.cu) and the link, for a build in `dir`. The
// sources must already be written there (main.cpp, cuda.cu).
std::vector<CompileStep> lean_build_steps(const ExtensionSpec& spec, const Toolchain& toolchain,
                                          const LeanShim& shim, const std::filesystem::path& dir,
                                          const std::filesystem::path& library);

// Why a failed lean build says nothing about its sources ("" when it does, i.e. the lean
// headers or the shim could not compile or link them). Only a failure that is the sources'
// is remembered in the build cache; these are not, so the next build tries lean again:
// no compiler diagnostic at all; the compiler killed or out of memory, disk or permission;
// a header the lean path itself provides (mooreeval_lean/*, a shadow header that exists in
// shim.shadow_dir) not found; the linker not finding its inputs.
std::string lean_failure_not_the_sources(const std::string& log, const LeanShim& shim);

// The cache key of a lean build, derived from the full build's key.
std::string lean_cache_key(const std::string& full_key, const LeanShim& shim);

}  // namespace musacoder::build
