// The build: the candidate's load_inline extensions compiled (in the sandbox, one build slot held),
// then the legality rules on the libraries themselves.
#include "mooreeval/pipeline/eval_job.h"

namespace musacoder::eval {

namespace fs = std::filesystem;

std::optional<Verdict> EvalJob::compile() {
  const build::BuildOptions bopts = build_options();
  {
    // A build slot bounds concurrent compiles to the cores, whatever the number of workers.
    const auto t_build_wait = Clock::now();
    const Permit build_slot = Permit::take(*ev.build_slots_);
    d.v.seconds.build_wait = since(t_build_wait);
    built = build::build_extensions(specs, *toolchain, bopts, dirs.root);
  }
  d.v.seconds.build = built.seconds;
  d.v.seconds.build_steps = built.step_seconds;
  d.v.cache_hit = built.cache_hit;
  d.v.build_path = built.path;
  d.log += built.lean_note + built.log;
  switch (built.outcome) {
    case build::BuildOutcome::kOk:
      break;
    case build::BuildOutcome::kCompileError:
      return stop(VerdictClass::kCompileError, Stage::kBuild, "the extension failed to compile");
    case build::BuildOutcome::kTimeout:
      return stop(VerdictClass::kTimeout, Stage::kBuild,
                  "the build exceeded --max-build-seconds (" +
                      std::to_string(options.max_build.count() / 1000.0) + " s)");
    case build::BuildOutcome::kInfraError:
      return stop(VerdictClass::kInfraError, Stage::kBuild, "the build could not run: " + built.log);
  }
  d.v.compiled = true;
  for (const auto& e : built.extensions) {
    for (auto& f : legality::check_library_size(e.library, options.legality)) d.v.legality.push_back(f);
    // What the library imports decides what it may call (also compute below the Python dispatcher).
    if (d.v.legality.empty())
      for (auto& f : legality::check_library_imports(e.library, options.legality, task.allow_libraries))
        d.v.legality.push_back(f);
  }
  if (!d.v.legality.empty())
    return stop(VerdictClass::kIllegal, Stage::kLegality, legality::describe(d.v.legality));
  return std::nullopt;
}

build::BuildOptions EvalJob::build_options() {
  build::BuildOptions bopts;
  bopts.backend = options.backend;
  bopts.max_build_time = options.max_build;
  bopts.cache_dir = options.cache_dir;
  bopts.cache_max_bytes = options.cache_max_bytes;
  bopts.max_log_bytes = options.max_log_bytes;
  bopts.path = options.build_path;
  bopts.lean_shim = ev.lean_shim(*toolchain);
  shim = bopts.lean_shim;
  if (jail->active()) {
    // Compilers see the toolchain (and the lean shim) and their own build dir, nothing else.
    std::vector<fs::path> ro = toolchain_read_only(*toolchain);
    if (shim) ro.insert(ro.end(), {shim->include_dir, shim->shadow_dir, shim->library});
    bopts.sandbox = [&jail = *jail, ro](ProcessOptions p) {
      sandbox::SandboxJob job{sandbox::JobKind::kBuild, fs::path(p.cwd), ro, 0};
      return jail.wrap(std::move(p), job);
    };
  }
  return bopts;
}

}  // namespace musacoder::eval
