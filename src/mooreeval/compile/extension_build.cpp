#include "mooreeval/compile/extension_build.h"

#include <optional>

#include "mooreeval/compile/build_cache.h"
#include "mooreeval/compile/full_build.h"
#include "mooreeval/compile/musa_build.h"
#include "core/files.h"
#include "core/text.h"

namespace musacoder::build {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const char* build_path_name(BuildPath p) {
  switch (p) {
    case BuildPath::kAuto:
      return "auto";
    case BuildPath::kLean:
      return "lean";
    case BuildPath::kFull:
      return "full";
  }
  return "?";
}

Result<BuildPath> parse_build_path(const std::string& name) {
  if (name == "auto") return BuildPath::kAuto;
  if (name == "lean") return BuildPath::kLean;
  if (name == "full") return BuildPath::kFull;
  return invalid_argument("unknown build path '" + name + "' (expected auto, lean or full)");
}

namespace {

// Writes the sources of one path into `dir` and runs its steps.
BuildOutcome build_in(const ExtensionSpec& spec, const std::string& cpp,
                      const std::vector<CompileStep>& steps, const fs::path& dir, Clock::time_point deadline,
                      const ProcessWrapper& sandbox, std::string& log,
                      std::map<std::string, double>& step_seconds, Backend backend = Backend::kCuda) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !write_file_atomic(dir / "main.cpp", cpp).ok()) {
    log += "cannot write sources in " + dir.string() + "\n";
    return BuildOutcome::kInfraError;
  }
  const bool musa = backend == Backend::kMusa;
  if (!spec.cuda_sources.empty() &&
      !write_file_atomic(dir / (musa ? "musa.mu" : "cuda.cu"),
                         musa ? generated_musa_source(spec) : generated_cuda_source(spec))
           .ok()) {
    log += "cannot write sources in " + dir.string() + "\n";
    return BuildOutcome::kInfraError;
  }
  std::vector<CompileStep> compiles = steps;
  const CompileStep link = compiles.back();
  compiles.pop_back();
  return run_compile_steps(compiles, link, dir, deadline, sandbox, log, &step_seconds);
}

// The first lines of a failed lean attempt: enough to see what the lean headers lacked.
std::string first_error(const std::string& log) {
  const auto at = log.find("error");
  if (at == std::string::npos) return truncate_middle(log, 400);
  const auto line_start = log.rfind('\n', at);
  return truncate_middle(log.substr(line_start == std::string::npos ? 0 : line_start + 1, 400), 400);
}

}  // namespace

BuildReport build_extensions(const std::vector<ExtensionSpec>& specs, const Toolchain& toolchain,
                             const BuildOptions& options, const fs::path& work_dir) {
  const auto start = Clock::now();
  const auto deadline = start + options.max_build_time;
  const BuildCache cache(options.cache_dir, options.cache_max_bytes);
  BuildReport report;
  report.cache_hit = !specs.empty();
  int lean_count = 0;
  auto finish = [&](BuildOutcome o) {
    report.outcome = o;
    report.log = truncate_middle(sanitize_utf8(report.log), options.max_log_bytes);
    report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (o != BuildOutcome::kOk) report.cache_hit = false;
    const int n = static_cast<int>(report.extensions.size());
    report.path = n == 0 ? "" : lean_count == n ? "lean" : lean_count == 0 ? "full" : "mixed";
    return report;
  };
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const ExtensionSpec& spec = specs[i];
    const bool cuda = uses_cuda(spec);
    if (cuda && options.backend == Backend::kCpu) {
      report.log += "extension '" + spec.name + "' has CUDA sources, but the backend is cpu\n";
      return finish(BuildOutcome::kCompileError);
    }
    if (options.backend == Backend::kMusa && toolchain.musa.mcc.empty()) {
      report.log += musa_unavailable_reason(toolchain, "", "", false) + "\n";
      return finish(BuildOutcome::kInfraError);
    }
    if (cuda && options.backend == Backend::kCuda && toolchain.nvcc.empty()) {
      report.log += "CUDA toolkit (nvcc) not found by torch.utils.cpp_extension (set CUDA_HOME)\n";
      return finish(BuildOutcome::kInfraError);
    }
    const fs::path dir = work_dir / ("ext" + std::to_string(i) + "_" + spec.name);
    const std::string lib_name = spec.name + ".so";
    const std::string full_key = full_cache_key(spec, toolchain, options.backend);

    std::string lean_reason;
    if (options.path == BuildPath::kFull)
      lean_reason = "--build-path full";
    else if (options.backend == Backend::kMusa)
      lean_reason = "no lean path on musa (the lean shim links CUDA ATen)";
    else if (!options.lean_shim)
      lean_reason = "no lean shim for this toolchain";
    else
      lean_reason = lean_unsuitable_reason(spec);
    const std::string lean_key = lean_reason.empty() ? lean_cache_key(full_key, *options.lean_shim) : "";
    if (!lean_reason.empty() && options.path == BuildPath::kLean) {
      report.log += "extension '" + spec.name + "' cannot take the lean path: " + lean_reason + "\n";
      return finish(BuildOutcome::kCompileError);
    }
    auto use = [&](const fs::path& library, bool lean) {
      report.extensions.push_back({spec.name, library, lean});
      lean_count += lean;
    };
    auto cached_full = [&]() -> bool {
      if (options.path == BuildPath::kLean) return false;
      auto hit = cache.lookup(full_key, lib_name);
      if (hit) use(materialize(*hit, dir), false);
      return hit.has_value();
    };
    // A cached full build serves only where the lean path is out (off, unsuitable, or known
    // not to compile): auto means "lean whenever it compiles", whatever the cache holds.
    auto cached = [&]() -> bool {
      if (!lean_key.empty()) {
        if (auto hit = cache.lookup(lean_key, lib_name)) {
          use(materialize(*hit, dir), true);
          return true;
        }
        if (!cache.has_failure(lean_key)) return false;
      }
      return cached_full();
    };
    if (cached()) continue;
    std::optional<KeyLock> lock;
    if (cache.enabled()) {
      lock.emplace(cache.dir(), full_key, deadline);
      if (lock->timed_out()) {
        report.log += "waited past the build deadline for a concurrent build of the same source\n";
        return finish(BuildOutcome::kTimeout);
      }
      if (cached()) continue;  // built by whoever held the lock before us
    }
    report.cache_hit = false;

    if (!lean_key.empty() && !cache.has_failure(lean_key)) {
      std::string lean_log;
      const fs::path lean_dir = dir / "lean";
      const BuildOutcome o =
          build_in(spec, lean_cpp_source(spec),
                   lean_build_steps(spec, toolchain, *options.lean_shim, lean_dir, lean_dir / lib_name),
                   lean_dir, deadline, options.sandbox, lean_log, report.step_seconds);
      if (o == BuildOutcome::kOk) {
        cache.publish(lean_key, lean_dir / lib_name);
        use(lean_dir / lib_name, true);
        continue;
      }
      if (o != BuildOutcome::kCompileError || options.path == BuildPath::kLean) {
        report.log += lean_log;
        return finish(o);
      }
      // Build it as load_inline does; remember the lean failure only when it was the sources'
      // (not a compiler out of memory or a shim out of reach), so the cache never lies later.
      const std::string not_theirs = lean_failure_not_the_sources(lean_log, *options.lean_shim);
      if (not_theirs.empty()) cache.record_failure(lean_key, lean_log);
      report.lean_note += spec.name + ": lean compile failed" +
                          (not_theirs.empty() ? "" : " (" + not_theirs + ", not remembered)") +
                          ", full build used: " + first_error(lean_log) + "\n";
      if (cached_full()) continue;  // lean is out now, so a full build in the cache serves
    } else if (!lean_key.empty()) {
      report.lean_note += spec.name + ": lean compile failed before (cached), full build used\n";
    } else {
      report.lean_note += spec.name + ": " + lean_reason + "\n";
    }
    const BuildOutcome o =
        options.backend == Backend::kMusa
            ? build_in(spec, generated_musa_cpp_source(spec), musa_build_steps(spec, toolchain, dir, dir / lib_name),
                       dir, deadline, options.sandbox, report.log, report.step_seconds, Backend::kMusa)
            : build_in(spec, generated_cpp_source(spec), full_build_steps(spec, toolchain, dir, dir / lib_name),
                       dir, deadline, options.sandbox, report.log, report.step_seconds);
    if (o != BuildOutcome::kOk) return finish(o);
    cache.publish(full_key, dir / lib_name);
    use(dir / lib_name, false);
  }
  return finish(BuildOutcome::kOk);
}

}  // namespace musacoder::build
