// Inspection: the runner imports the candidate's module with load_inline recording (unless the
// AST rules already reject it), without a GPU and in the sandbox; then the static legality rules
// on what it found. Nothing is built yet.
#include <functional>

#include "mooreeval/pipeline/eval_job.h"
#include "mooreeval/pipeline/inspect_cache.h"

namespace musacoder::eval {

namespace fs = std::filesystem;
using nlohmann::json;
using run::JobKey;

namespace {

// What the inspection is told besides its files: the target device (so that device queries answer
// as the run's device would), the run-time op allowlist (so that the static rule agrees with it) and
// the fallback-code policy. Part of the inspection cache key.
json inspect_settings(const EvalOptions& options) {
  return {{key(JobKey::kDeviceType), options.backend == build::Backend::kCpu ? "cpu" : "cuda"},
          {key(JobKey::kAllowedTorchOps), options.legality.allowed_torch_ops},
          {key(JobKey::kForbidFallbackCode), options.legality.forbid_fallback_code}};
}

// Runs the runner's inspect mode. Returns its result when the candidate was inspected
// (status "ok"); otherwise the verdict is decided (in `d`) and the result is empty.
std::optional<json> run_inspection(const EvalOptions& options, const UntrustedJob& job, Draft& d) {
  const double max_run_seconds = options.max_run.count() / 1000.0;
  auto t0 = Clock::now();
  json inspect_job = inspect_settings(options);
  inspect_job[key(JobKey::kCandidatePath)] = job.candidate_path.string();
  inspect_job[key(JobKey::kTaskPath)] = job.task_path.string();
  auto inspected = run::run_runner(
      job.runner,
      {"inspect", inspect_job, job.dir, options.max_run, {{"CUDA_VISIBLE_DEVICES", ""}}, job.wrapper});
  d.v.seconds.inspect = since(t0);
  if (inspected.ok()) note_runner_seconds(d.v, "inspect", *inspected);
  if (!inspected.ok()) {
    d.fail(VerdictClass::kInfraError, Stage::kInspect, inspected.status().message());
    return std::nullopt;
  }
  if (!inspected->result || inspected->result->value("status", "") != "ok") {
    run::RunnerOutcome o = std::move(inspected).value();
    o.phase = "candidate_inspect";  // any crash here happened in candidate code
    classify_candidate_failure(d, o, Stage::kInspect, max_run_seconds);
    return std::nullopt;
  }
  return std::move(inspected->result);
}

// The static legality rules on an inspection's result. Returns true when that decided the
// verdict (in `d`); otherwise fills `specs` for the build.
bool screen_inspection(const EvalOptions& options, const json& inspected, Draft& d,
                       std::vector<build::ExtensionSpec>& specs) {
  for (const auto& j : inspected.value("extensions", json::array())) {
    auto s = build::extension_spec_from_json(j);
    if (!s.ok()) {
      d.fail(VerdictClass::kInfraError, Stage::kInspect, s.status().message());
      return true;
    }
    specs.push_back(std::move(s).value());
  }
  d.v.legality = legality::findings_from_inspection(inspected.value("findings", json::array()));
  // A candidate with Python findings was not executed, so it recorded no extensions.
  if (d.v.legality.empty()) {
    for (auto& f : legality::check_extension_sources(specs, options.backend)) d.v.legality.push_back(f);
    for (auto& f : legality::check_source_text(specs)) d.v.legality.push_back(f);
    for (auto& f : legality::check_build_flags(specs)) d.v.legality.push_back(f);
  }
  if (d.v.legality.empty()) return false;
  d.fail(VerdictClass::kIllegal, Stage::kLegality, legality::describe(d.v.legality));
  return true;
}

// Inspects the candidate, or recalls the inspection of an identical submission. `place`
// leases the sandboxed runner, only on a miss. Returns the result, or nullopt when the
// verdict is decided (in `d`).
std::optional<json> inspect_candidate(const EvalOptions& options, const InspectCache& cache,
                                      std::string_view source, const fs::path& task_path,
                                      const fs::path& scratch,
                                      const std::function<Result<UntrustedJob>()>& place, Draft& d) {
  std::string key;
  if (cache.enabled()) {
    const auto t0 = Clock::now();
    if (auto task_text = read_file(task_path); task_text.ok()) {
      key = cache.key(source, *task_text + "\n" + inspect_settings(options).dump());
      if (auto hit = cache.lookup(key)) {
        d.v.seconds.inspect = since(t0);
        d.v.inspect_cached = true;
        return hit;
      }
    }
  }
  auto job = place();
  if (!job.ok()) {
    d.fail(VerdictClass::kInfraError, Stage::kInspect, job.status().message());
    return std::nullopt;
  }
  auto result = run_inspection(options, *job, d);
  if (result && !key.empty()) cache.remember(key, *result, scratch);
  return result;
}

}  // namespace

std::optional<Verdict> EvalJob::inspect() {
  const ProcessWrapper inspect_wrapper =
      jail->wrapper({sandbox::JobKind::kRunCpu,
                     dirs.inspect,
                     {runner_dir, task_path, candidate_path},
                     0,
                     /*limit_address_space=*/options.backend == build::Backend::kCpu});
  auto inspected = inspect_candidate(
      options, ev.inspect_cache(), source, task_path, dirs.inspect,
      [&] {
        return untrusted_job(ev.untrusted_pool(Evaluator::UntrustedRole::kInspect), cold, dirs.inspect,
                             inspect_wrapper, candidate_path, task_path);
      },
      d);  // a warm member is free again for the next inspection
  if (!inspected || screen_inspection(options, *inspected, d, specs)) return finalize(d.v);
  fallback_blocks = inspected->value("fallback_blocks", json::array());
  for (const auto& note : inspected->value("notes", json::array()))
    if (note.is_string()) d.log += "inspect: " + note.get<std::string>() + "\n";
  return std::nullopt;
}

Verdict EvalJob::passed_static_checks() {
  d.v.verdict = VerdictClass::kOk;
  d.v.stage = Stage::kLegality;
  d.v.message = "passed the static checks (not built, not run)";
  return finalize(d.v);
}

}  // namespace musacoder::eval
