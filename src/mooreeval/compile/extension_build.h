// The build stage: compiles the extensions a candidate passes to load_inline, in an
// isolated directory, under a deadline, with a content-addressed cache. Each extension
// takes the lean path (lean_build.h: ~1-3 s) when it can and the full path (full_build.h:
// exactly load_inline's build, ~30-60 s) otherwise; both give a library the runner loads as
// the module load_inline would have returned.
//
// Thread-safety: build_extensions() may run concurrently, also from several processes
// sharing one cache directory (see build_cache.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "mooreeval/compile/compile_steps.h"
#include "mooreeval/compile/extension_spec.h"
#include "mooreeval/compile/lean_build.h"
#include "mooreeval/compile/toolchain.h"
#include "core/status.h"
#include "process/subprocess.h"

namespace musacoder::build {

enum class BuildPath { kAuto, kLean, kFull };
const char* build_path_name(BuildPath p);
Result<BuildPath> parse_build_path(const std::string& name);

struct BuildOptions {
  Backend backend = Backend::kCpu;
  std::chrono::milliseconds max_build_time{60000};  // --max-build-seconds, for all extensions together
  std::filesystem::path cache_dir;                  // empty: no cache
  std::uint64_t cache_max_bytes = std::uint64_t{20} << 30;  // --cache-max-bytes (0: unbounded)
  std::size_t max_log_bytes = 64 << 10;                     // compiler output kept per build
  // --build-path: auto = lean where it compiles, else full; lean = lean only (a source the
  // lean headers cannot compile is a compile error; for testing); full = load_inline's build.
  BuildPath path = BuildPath::kAuto;
  const LeanShim* lean_shim = nullptr;  // the prepared shim; null: no lean path (owned by the caller)
  ProcessWrapper sandbox;               // applied to every compiler/linker process (src/sandbox); empty: none
};

struct BuiltExtension {
  std::string name;
  std::filesystem::path library;  // the .so to import (in the job's directory)
  bool lean = false;              // built by the lean path (load it through the shim)
};

struct BuildReport {
  BuildOutcome outcome = BuildOutcome::kOk;
  std::vector<BuiltExtension> extensions;
  std::string log;         // compiler output (truncated), or the reason for kInfraError
  bool cache_hit = false;  // every extension came from the cache
  std::string path;        // "lean", "full" or "mixed" (which path built the extensions)
  std::string lean_note;   // why the lean path was not taken, when it was not
  double seconds = 0.0;
  // Wall seconds per compiler ("nvcc", "c++", ...; concurrent, so they overlap) and "link",
  // summed over the extensions built here (none for cache hits).
  std::map<std::string, double> step_seconds;
};

// Compiles every spec into `work_dir`. Never fails with a Status: the outcome says whose
// fault a failure is (a missing compiler is kInfraError, a bad source kCompileError).
BuildReport build_extensions(const std::vector<ExtensionSpec>& specs, const Toolchain& toolchain,
                             const BuildOptions& options, const std::filesystem::path& work_dir);

}  // namespace musacoder::build
