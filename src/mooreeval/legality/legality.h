// The legality stage: a candidate must compute the result with its own kernel.
//
// Sources of findings, each rejecting the candidate as `illegal` (docs/legality.md):
//  - static findings from the runner's AST inspection (no load_inline, torch compute
//    calls in ModelNew.forward, try/except fallback, use of the reference Model, file /
//    network / process / thread / reflection access, monkey-patching, streams);
//  - the extension sources and build flags (on cuda: a __global__ kernel that is launched;
//    everywhere: no host-file includes, .incbin, process/file/network calls, side streams,
//    flags that read host files) and the built library (no huge static arrays);
//  - the aten ops actually dispatched during the forward calls (from Python or from the
//    extension's C++), checked against an allowlist of non-compute ops;
//  - run-time findings of the candidate runner (input mutation, threads left running,
//    replaced harness functions, decoy kernels, side streams, lazy tensor subclasses).
//
// All functions are pure (no I/O) except check_library_size, and thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "mooreeval/compile/extension_build.h"
#include "mooreeval/compile/toolchain.h"
#include "core/status.h"

namespace musacoder::legality {

struct LegalityOptions {
  // aten ops (overload packet names) a forward may dispatch: allocation, views, copies.
  std::set<std::string> allowed_torch_ops = default_allowed_ops();
  bool check_runtime_ops = true;  // --no-runtime-op-check disables the dispatch check
  // Run-time behaviour checks: input mutation, threads, harness patching, decoy kernels,
  // consistency calls after the benchmark (--no-runtime-behaviour-check disables them).
  bool check_runtime_behaviour = true;
  // A speedup above this is re-measured with a second method (wall clock over distinct
  // input sets) and the smaller of the two is kept (--recheck-speedup-above; 0: never).
  double recheck_speedup_above = 3.0;
  // Memory the re-measurement may spend on distinct input sets (per side).
  std::size_t recheck_max_bytes = std::size_t{1} << 30;
  // Fallback code (python/mooreeval_runner/fallback.py): by default PyTorch compute inside a
  // conditional block of forward (an `else` of a device check, an `except` handler) is allowed when
  // the run never enters the block; true keeps the strict static rule (any torch compute in forward
  // and any try/except there is illegal before the run) — --forbid-fallback-code.
  bool forbid_fallback_code = false;
  // cuda: in the profiled consistency call, the least share of compute-kernel device time (memory
  // fills and copies excluded) that must run in the candidate's own kernels; below it the call ran
  // mostly in library kernels (libtorch, cuBLAS, cuDNN) beside a token kernel of its own:
  // `foreign_kernel_time` (--min-own-kernel-share; 0 turns it off).
  double min_own_kernel_share = 0.5;
  // Judge what each built library imports (check_library_imports); --no-import-check disables it.
  bool check_library_imports = true;
  // Largest mapped size (code + data + bss) of a built extension library.
  std::size_t max_library_bytes = std::size_t{1} << 30;

  static std::set<std::string> default_allowed_ops();
};

struct Finding {
  std::string rule;     // e.g. "torch_compute_in_forward"
  std::string message;  // for the verdict log
  int line = 0;         // in the candidate source, when known
};

// Findings the runner's inspect mode reported ({"rule","message","line"} objects).
std::vector<Finding> findings_from_inspection(const nlohmann::json& findings);

// Checks the kernel sources for the backend.
std::vector<Finding> check_extension_sources(const std::vector<build::ExtensionSpec>& specs,
                                             build::Backend backend);

// The extension sources as a compiler would read them: no host-file includes (absolute,
// `..`, computed), no .incbin/#embed/#pragma dependency, no process/file/network/dlopen/
// syscall calls, no side streams or graph capture.
std::vector<Finding> check_source_text(const std::vector<build::ExtensionSpec>& specs);

// extra_cflags / extra_cuda_cflags / extra_ldflags / extra_include_paths: no paths (host
// files), no response files, no flags that read, write or run other files.
std::vector<Finding> check_build_flags(const std::vector<build::ExtensionSpec>& specs);

// Names of the __global__ kernels the CUDA sources define (for run-time attribution).
std::vector<std::string> kernel_names(const std::vector<build::ExtensionSpec>& specs);

// The size the dynamic loader maps for an ELF shared library (sum of PT_LOAD p_memsz).
// Fails on a file that is not a 64-bit little-endian ELF.
Result<std::uint64_t> mapped_library_bytes(const std::filesystem::path& library);

// A finding when a built library maps more than options.max_library_bytes (e.g. a 16 GiB
// static array); an unreadable library is also a finding.
std::vector<Finding> check_library_size(const std::filesystem::path& library, const LegalityOptions& options);

// Import-level check of a built extension (library_imports.h, docs/legality.md): its undefined dynamic
// symbols against the allowlist of non-compute libtorch entry points and options.allowed_torch_ops —
// aten compute called from C++ (also below the Python dispatch key, where the run-time op check cannot
// see it), the dispatcher, vendor BLAS/DNN families not in `allowed_libraries`, run-time symbol lookup
// (dlopen/dlsym) and Python import. Each finding quotes the symbols. An unreadable library is a finding.
std::vector<Finding> check_library_imports(const std::filesystem::path& library, const LegalityOptions& options,
                                           const std::vector<std::string>& allowed_libraries);

// Run-time findings the candidate runner reported ({"rule","message","line"} objects).
// `reference_mutates_inputs`: the reference itself changes its inputs, so the candidate may.
std::vector<Finding> findings_from_run(const nlohmann::json& findings, bool reference_mutates_inputs,
                                       const LegalityOptions& options);

// Ops dispatched during a forward call that are not allowed.
std::vector<Finding> check_dispatched_ops(const std::map<std::string, int>& ops,
                                          const LegalityOptions& options);

// "rule: message (line N); ..." for logs.
std::string describe(const std::vector<Finding>& findings);

}  // namespace musacoder::legality
