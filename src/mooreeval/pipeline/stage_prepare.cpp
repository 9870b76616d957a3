// The stages before the candidate is inspected: its text extracted and written into a work dir of
// its own, under a sandbox uid of its own; its seeds drawn; the reference and candidate runners
// started, so that they import torch and set up the device while we inspect and build.
#include "mooreeval/candidate/extract.h"
#include "mooreeval/pipeline/eval_job.h"

namespace musacoder::eval {

namespace fs = std::filesystem;
using nlohmann::json;
using run::JobKey;

std::optional<Verdict> EvalJob::prepare(std::string_view submission) {
  auto t0 = Clock::now();
  auto submission_code = candidate::extract_candidate(submission, {options.max_submission_bytes});
  d.v.seconds.extract = since(t0);
  if (!submission_code.ok())
    return stop(VerdictClass::kFormatError, Stage::kExtract, submission_code.status().message());
  d.v.candidate_sha256 = submission_code->source_sha256;
  source = submission_code->source;

  auto probed = ev.toolchain();
  if (!probed.ok()) return stop(VerdictClass::kInfraError, Stage::kPrepare, probed.status().message());
  toolchain = *probed;
  auto sandbox = ev.sandbox();
  if (!sandbox.ok()) return stop(VerdictClass::kInfraError, Stage::kPrepare, sandbox.status().message());
  d.v.config["sandbox"] = (*sandbox)->settings();
  auto job_sandbox = (*sandbox)->for_job();  // one uid for every process of this evaluation
  if (!job_sandbox.ok())
    return stop(VerdictClass::kInfraError, Stage::kPrepare, job_sandbox.status().message());
  jail.emplace(std::move(job_sandbox).value());
  auto created = TempDir::create("mooreeval-job-", options.work_root);
  if (!created.ok()) return stop(VerdictClass::kInfraError, Stage::kPrepare, created.status().message());
  work.emplace(std::move(created).value());
  if (options.keep_work_dirs) work->keep();
  auto made = make_job_dirs(work->path());
  if (!made.ok()) return stop(VerdictClass::kInfraError, Stage::kPrepare, made.status().message());
  dirs = *made;
  candidate_path = dirs.root / "candidate.py";
  task_path = fs::absolute(task.path);
  runner_dir = fs::absolute(options.runner.runner_dir);
  run_kind = ev.run_job_kind();
  if (!write_file_atomic(candidate_path, source).ok())
    return stop(VerdictClass::kInfraError, Stage::kPrepare, "cannot write the candidate file");

  describe_jobs();
  runner = ev.runner_options();
  // The trusted warm runner forks its jobs outside any sandbox: with the sandbox on, only
  // the reference (task code) runs there; candidate code runs in a sandboxed warm runner
  // (untrusted_pool) or starts cold in its own sandbox.
  cold = runner;
  if (jail->active()) cold.warm.reset();
  return std::nullopt;
}

void EvalJob::describe_jobs() {
  // Fresh seeds per evaluation (or a verdict's, replayed); both sides get the same ones.
  seeds = ev.draw_seeds(task.trials);
  const json trial_seeds = seeds.trials;
  common = {{key(JobKey::kTaskPath), task_path.string()},
            {key(JobKey::kDevice), ev.device_string()},
            {key(JobKey::kTrialSeeds), trial_seeds},
            {key(JobKey::kInitSeed), seeds.init},
            {key(JobKey::kWarmupIters), options.warmup_iters},
            {key(JobKey::kBenchmarkIters), options.benchmark_iters},
            {key(JobKey::kFlushL2), options.flush_l2},
            {key(JobKey::kHostHeadStart), options.host_head_start},
            {key(JobKey::kTimingRounds), timing_rounds_of(options)},
            {key(JobKey::kControlFd), 3},
            {key(JobKey::kThreads), options.cpu_threads},
            // Consistency calls after the benchmark and the second timing method.
            {key(JobKey::kCheckSeeds), seeds.checks},
            {key(JobKey::kRecheckSeed), seeds.recheck},
            {key(JobKey::kRecheckMaxBytes), options.legality.recheck_max_bytes}};
  // The seeds and the timing method, in every verdict: enough to re-run this evaluation.
  d.v.config["seeds"] = {
      {"init", seeds.init}, {"trials", trial_seeds}, {"checks", seeds.checks}, {"recheck", seeds.recheck}};
  std::string method =
      options.backend == build::Backend::kCpu
          ? "median of per-call wall-clock times (perf_counter) after warm-up calls"
          : std::string(
                "median of per-call device times (events around each call on the current stream, "
                "host not waiting between calls, device-wide synchronize after the last)") +
                (options.flush_l2 ? ", L2 flushed before each call" : "") +
                (options.host_head_start ? ", then a device-side wait of twice the host's time per call (the "
                                           "loop again with twice the wait if the host fell behind)"
                                         : "");
  if (const int rounds = timing_rounds_of(options); rounds > 1)
    method +=
        "; in " + std::to_string(rounds) + " rounds of ceil(benchmark_iters / " + std::to_string(rounds) +
        ") calls, reference and candidate alternating (ABBA), the speedup the median of the rounds' ratios";
  d.v.config["timing_method"] = method;
  ref_job = common;
  ref_job[key(JobKey::kOutputsPath)] = run::outputs_file(dirs.reference, run::Side::kReference).string();
  ref_job[key(JobKey::kChecksPath)] = run::checks_file(dirs.reference, run::Side::kReference).string();
  ref_job[key(JobKey::kTimingPath)] = run::timing_file(dirs.reference, run::Side::kReference).string();
  ref_job[key(JobKey::kRecheckPath)] = run::recheck_file(dirs.reference, run::Side::kReference).string();
}

std::optional<Verdict> EvalJob::start_runners() {
  // The reference: in a resident server once the run slot is ours (its device is set up
  // already), or else a process of its own that starts now, imports torch while we build,
  // and waits at its gate.
  residents = ev.resident_references();
  if (!residents) {
    auto started = start_reference(runner, kBeforeRunSlot);
    if (!started.ok()) return stop(VerdictClass::kInfraError, Stage::kRun, started.status().message());
    reference = std::move(started).value();
  }
  // The candidate runner starts as early as a permit allows: it imports the task and sets
  // up the device and the harness while we inspect and build, then waits at its gate
  // (nothing of the candidate's runs before "run"). What only the build knows comes later,
  // in its late job file. A cold job in a sandbox sees only the paths bound when it starts,
  // so that one starts after the build, with its libraries (trials()).
  if (auto permit = Permit::try_take(*ev.candidate_permits_)) {
    auto early = start_candidate(std::move(*permit), {}, /*early=*/true);
    if (!early.ok()) return stop(VerdictClass::kInfraError, Stage::kRun, early.status().message());
    if (*early) cand_run.emplace(std::move(**early));
  }
  return std::nullopt;
}

Result<std::unique_ptr<run::RunnerSession>> EvalJob::start_reference(const run::RunnerOptions& r,
                                                                     std::chrono::milliseconds deadline) {
  const bool unwrapped = r.warm != nullptr;  // trusted warm jobs run on the host
  return run::RunnerSession::start(
      r, {"reference",
          ref_job,
          dirs.reference,
          deadline,
          {},
          unwrapped ? ProcessWrapper{}
                    : jail->wrapper({run_kind, dirs.reference, {runner_dir, task_path}, options.gpu_index})});
}

Result<std::optional<CandidateRun>> EvalJob::start_candidate(Permit permit, std::vector<fs::path> read_only,
                                                             bool early) {
  read_only.insert(read_only.begin(), {runner_dir, task_path, candidate_path});
  for (const auto& p : compiler_prefixes(*toolchain)) read_only.push_back(p);
  auto place = untrusted_job(ev.untrusted_pool(Evaluator::UntrustedRole::kRun), cold, dirs.candidate,
                             jail->wrapper({run_kind, dirs.candidate, read_only, options.gpu_index}),
                             candidate_path, task_path);
  if (!place.ok()) return place.status();
  if (early && !place->lease && jail->active()) return std::optional<CandidateRun>{};
  const fs::path dir = place->dir;
  json job = common;
  job[key(JobKey::kTaskPath)] = place->task_path.string();
  job[key(JobKey::kCandidatePath)] = place->candidate_path.string();
  job[key(JobKey::kOutputsPath)] = run::outputs_file(dir, run::Side::kCandidate).string();
  job[key(JobKey::kChecksPath)] = run::checks_file(dir, run::Side::kCandidate).string();
  job[key(JobKey::kTimingPath)] = run::timing_file(dir, run::Side::kCandidate).string();
  job[key(JobKey::kRecheckPath)] = run::recheck_file(dir, run::Side::kCandidate).string();
  job[key(JobKey::kPoisonBytes)] = options.poison_bytes;
  job[key(JobKey::kMinOwnKernelShare)] = options.legality.min_own_kernel_share;
  job[key(JobKey::kPoisonHost)] = true;
  const fs::path late =
      place->lease ? place->lease->staged_path(std::string(run::kLateJobName)) : dir / run::kLateJobName;
  job[key(JobKey::kLateJobPath)] = late.string();
  auto session =
      run::RunnerSession::start(place->runner, {"candidate", job, dir, kBeforeRunSlot, {}, place->wrapper});
  if (!session.ok()) return session.status();
  return std::optional<CandidateRun>(
      CandidateRun{std::move(permit), std::move(place).value(), std::move(session).value(), late});
}

}  // namespace musacoder::eval
