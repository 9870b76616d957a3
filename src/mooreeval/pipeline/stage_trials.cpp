// The trials: reference and candidate run them side by side in a run slot, sharing the device with
// the other slots' untimed work; then their outputs are compared.
#include <shared_mutex>

#include "mooreeval/pipeline/eval_job.h"

namespace musacoder::eval {

namespace fs = std::filesystem;
using nlohmann::json;
using run::Command;
using run::Gate;
using run::JobKey;

std::optional<Verdict> EvalJob::trials() {
  if (auto v = hand_over_late_job()) return v;
  const auto t_wait = Clock::now();
  run_slot.emplace(Permit::take(*ev.run_slots_));
  d.v.seconds.run_wait = since(t_wait);
  const auto t0 = Clock::now();
  slot_last = t0;
  // The device is shared with the other slots' untimed work until the benchmark, which has
  // it alone (timing_lock.h).
  std::shared_lock<TimingLock> untimed(ev.timing_lock_);
  slot_lap("device_wait");
  if (auto v = acquire_reference()) return v;
  run::RunnerSession& ref = *reference;
  run::RunnerSession& cand = *cand_run->session;
  // Both sides' trials run at once (neither is timed; only we see both outputs): the slot
  // holds the longer of the two, not their sum.
  ref.command(command(Command::kRun));
  cand.command(command(Command::kRun));
  if (!ref.wait_for(gate(Gate::kOutputsReady))) {
    auto o = ref.finish();
    d.log += runner_log(o);
    cand.set_deadline(std::chrono::milliseconds(0));  // its trials are of no use now
    cand.finish();
    std::string why = o.result ? o.result->value("message", "") : o.error;
    return stop(VerdictClass::kInfraError, Stage::kRun, "the reference failed: " + why);
  }
  // The harness's own work on the trials (device-to-host copies and output files: 14 GB per side for
  // a 1 GB output) is the same on both sides: the candidate's deadline does not charge it for the
  // time the reference needed for it. --max-run-seconds is what it may take beyond that.
  cand.set_deadline(options.max_run);
  if (!cand.wait_for(gate(Gate::kOutputsReady))) {
    ref.finish();
    auto o = cand.finish();
    d.v.seconds.run = since(t0);
    return finalize(classify_candidate_failure(d, o, Stage::kRun, max_run_seconds));
  }
  d.v.seconds.run = since(t0);
  untimed.unlock();
  slot_lap("outputs");
  return check_outputs();
}

std::optional<Verdict> EvalJob::check_outputs() {
  run::RunnerSession& ref = *reference;
  run::RunnerSession& cand = *cand_run->session;
  auto ref_outputs = verify::read_output_file(run::outputs_file(dirs.reference, run::Side::kReference));
  auto cand_outputs = verify::read_output_file(run::outputs_file(cand_dir, run::Side::kCandidate));
  if (!ref_outputs.ok() || !cand_outputs.ok()) {
    ref.finish();
    cand.finish();
    return stop(VerdictClass::kInfraError, Stage::kVerify,
                "unreadable outputs: " +
                    (!ref_outputs.ok() ? ref_outputs.status() : cand_outputs.status()).message());
  }
  ref_out = std::move(ref_outputs).value();
  numeric = verify::compare_outputs(ref_out, *cand_outputs, tol);
  d.v.passed = numeric.passed;
  d.v.max_abs_error = numeric.max_abs_error;
  d.v.max_rel_error = numeric.max_rel_error;
  all_pass = numeric.passed == numeric.trials && numeric.trials > 0;
  slot_lap("verify");
  return std::nullopt;
}

std::optional<Verdict> EvalJob::hand_over_late_job() {
  if (!cand_run) {
    std::vector<fs::path> libraries;
    for (const auto& e : built.extensions) {
      libraries.push_back(fs::absolute(e.library));
      if (e.lean && shim) libraries.push_back(fs::absolute(shim->library));
    }
    auto started =
        start_candidate(Permit::take(*ev.candidate_permits_), std::move(libraries), /*early=*/false);
    if (!started.ok()) return stop(VerdictClass::kInfraError, Stage::kRun, started.status().message());
    if (!*started) return stop(VerdictClass::kInfraError, Stage::kRun, "the candidate runner did not start");
    cand_run.emplace(std::move(**started));
  }
  const UntrustedJob& place = cand_run->place;
  cand_dir = place.dir;
  d.v.config["candidate_runner"] = place.lease ? "warm (sandboxed)" : (cold.warm ? "warm" : "cold");
  json late = {{key(JobKey::kKernelNames), legality::kernel_names(specs)},
               {key(JobKey::kExtensions), json::array()},
               {key(JobKey::kFallbackBlocks), fallback_blocks}};
  for (std::size_t i = 0; i < built.extensions.size(); ++i) {
    const auto& e = built.extensions[i];
    // A warm member sees only its own job dir (the lean shim: bound at its start).
    auto library = place.provide(e.library, "ext" + std::to_string(i) + "-" + e.library.filename().string());
    if (!library.ok()) return stop(VerdictClass::kInfraError, Stage::kRun, library.status().message());
    json entry = {{"name", e.name}, {"path", library->string()}};
    if (e.lean && shim) entry["lean_shim"] = shim->library.string();
    late[key(JobKey::kExtensions)].push_back(entry);
  }
  const fs::path written = dirs.candidate / run::kLateJobName;
  if (!write_file_atomic(written, late.dump()).ok())
    return stop(VerdictClass::kInfraError, Stage::kRun, "cannot write the candidate's late job file");
  auto provided = place.provide(written, std::string(run::kLateJobName));
  if (!provided.ok() || *provided != cand_run->late_job)
    return stop(VerdictClass::kInfraError, Stage::kRun, "cannot hand the late job file to the candidate");
  return std::nullopt;
}

std::optional<Verdict> EvalJob::acquire_reference() {
  // Deadlines count from the slot: the reference runs, benchmarks and may re-measure.
  const auto ref_deadline = 3 * options.max_run + std::chrono::milliseconds(60000);
  if (!reference) {
    if (auto lease = residents->acquire()) ref_lease.emplace(std::move(*lease));
    // No resident server left: a process of its own, as without them.
    d.v.config["reference_runner"] = ref_lease ? "resident" : runner.warm ? "warm" : "cold";
    auto started = start_reference(ref_lease ? ref_lease->runner_options() : runner, ref_deadline);
    if (!started.ok()) {
      cand_run->session->set_deadline(std::chrono::milliseconds(0));
      cand_run->session->finish();
      return stop(VerdictClass::kInfraError, Stage::kRun, started.status().message());
    }
    reference = std::move(started).value();
  } else {
    d.v.config["reference_runner"] = runner.warm ? "warm" : "cold";
  }
  slot_lap("reference_acquire");
  reference->set_deadline(ref_deadline);
  cand_run->session->set_deadline(options.max_run);
  if (!reference->wait_for(gate(Gate::kLoaded))) {
    auto o = reference->finish();
    d.log += runner_log(o);
    return stop(VerdictClass::kInfraError, Stage::kRun, "the reference runner failed to start: " + o.error);
  }
  slot_lap("reference_ready");
  return std::nullopt;
}

}  // namespace musacoder::eval
