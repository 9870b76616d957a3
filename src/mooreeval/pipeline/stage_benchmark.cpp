// The benchmark, only at 100% pass: reference first, then candidate, never overlapping, with the
// device to themselves (the timing lock held exclusively). Each side announces "timed" after its
// benchmark (the candidate also after its consistency calls) and waits, so both can re-measure if
// the speedup looks too good. Without 100% pass both sides are only told to exit. Either way both
// runners end here, and their results are read. The candidate's deadline restarts at the benchmark.
#include <mutex>

#include "mooreeval/pipeline/eval_job.h"
#include "mooreeval/pipeline/runtime_checks.h"

namespace musacoder::eval {

using run::Command;
using run::Gate;

std::optional<Verdict> EvalJob::benchmark() {
  const auto t0 = Clock::now();
  std::unique_lock<TimingLock> timed(ev.timing_lock_, std::defer_lock);
  if (all_pass) {
    timed.lock();
    slot_lap("timing_wait");
    // The candidate's clock starts again: the output check (ours: 18 s for 8 trials of a 1 GiB output)
    // and the wait for the timing lock are not its time; its benchmark gets --max-run-seconds of its own.
    cand_run->session->set_deadline(options.max_run);
  }
  if (auto v = time_both_sides()) return v;
  // The candidate's process ends inside the slot (nothing of it may still run on the device
  // when the next job times); the reference's exit (trusted code, its device work done)
  // overlaps the next job.
  if (timed) timed.unlock();
  slot_lap("bench");
  cand_done = cand_run->session->finish();
  run_slot.reset();
  slot_lap("exit");
  ref_done = reference->finish();
  note_runner_seconds(d.v, "reference", ref_done);
  note_runner_seconds(d.v, "candidate", cand_done);
  d.v.seconds.benchmark = since(t0);
  if (all_pass) {
    if (!ref_done.result || ref_done.result->value("status", "") != "ok") {
      d.log += runner_log(ref_done);
      return stop(VerdictClass::kInfraError, Stage::kBenchmark, "the reference benchmark failed");
    }
    d.v.reference_time = timing_from(*ref_done.result);
  }
  if (!cand_done.result || cand_done.result->value("status", "") != "ok")
    return finalize(classify_candidate_failure(d, cand_done, all_pass ? Stage::kBenchmark : Stage::kRun,
                                               max_run_seconds));
  return std::nullopt;
}

std::optional<Verdict> EvalJob::time_both_sides() {
  run::RunnerSession& ref = *reference;
  run::RunnerSession& cand = *cand_run->session;
  if (!all_pass) {  // nothing to time: both sides are only told to exit
    ref.command(command(Command::kExit));
    cand.command(command(Command::kExit));
    return std::nullopt;
  }
  for (int r = 0; r < timing_rounds_of(options); ++r)
    if (!timing_round(r)) break;  // the side's outcome says why when it is finished
  if (ref_rounds.empty()) {       // the reference's first round (it times first) failed
    auto o = ref.finish();
    cand.finish();
    d.log += runner_log(o);
    return stop(VerdictClass::kInfraError, Stage::kBenchmark, "the reference benchmark failed");
  }
  const double threshold = options.legality.recheck_speedup_above;
  const std::optional<double> speedup = paired_speedup(ref_rounds, cand_rounds);
  if (speedup && threshold > 0 && *speedup > threshold) recheck_speedup(*speedup);
  return std::nullopt;
}

bool EvalJob::timing_round(int r) {
  auto once = [&](run::RunnerSession& side, const std::filesystem::path& file, std::vector<double>& medians) {
    side.command(command(Command::kBench));
    std::optional<double> m;
    if (!side.wait_for(gate(Gate::kTimed)) || !(m = read_timing_median(file))) return false;
    medians.push_back(*m);
    return true;
  };
  run::RunnerSession& ref = *reference;
  run::RunnerSession& cand = *cand_run->session;
  const auto ref_file = run::timing_file(dirs.reference, run::Side::kReference);
  const auto cand_file = run::timing_file(cand_dir, run::Side::kCandidate);
  if (r % 2 == 1) return once(cand, cand_file, cand_rounds) && once(ref, ref_file, ref_rounds);
  return once(ref, ref_file, ref_rounds) && once(cand, cand_file, cand_rounds);
}

void EvalJob::recheck_speedup(double event_speedup) {
  // Too good to take on one method's word: both sides again, wall clock over distinct inputs.
  run::RunnerSession& ref = *reference;
  run::RunnerSession& cand = *cand_run->session;
  ref.command(command(Command::kRemeasure));
  std::optional<double> ref_mean, cand_mean;
  if (ref.wait_for(gate(Gate::kTimed)))
    ref_mean = read_recheck_mean(run::recheck_file(dirs.reference, run::Side::kReference));
  cand.command(command(Command::kRemeasure));
  if (cand.wait_for(gate(Gate::kTimed)))
    cand_mean = read_recheck_mean(run::recheck_file(cand_dir, run::Side::kCandidate));
  if (ref_mean && cand_mean && *cand_mean > 0) {
    d.v.speedup_check = SpeedupCheck{options.legality.recheck_speedup_above,
                                     event_speedup,
                                     *ref_mean / *cand_mean,
                                     *ref_mean,
                                     *cand_mean,
                                     "wall_clock_batch"};
  }
}

}  // namespace musacoder::eval
