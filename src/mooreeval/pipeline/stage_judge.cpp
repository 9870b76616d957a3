// The verdict of a candidate that ran to the end: the dynamic legality rules first (dispatched aten
// ops, run-time findings, the consistency calls after the benchmark), then wrong_answer, or ok with
// its speedup.
#include <algorithm>
#include <map>

#include "mooreeval/pipeline/eval_job.h"
#include "mooreeval/pipeline/runtime_checks.h"

namespace musacoder::eval {

using nlohmann::json;

Verdict EvalJob::judge() {
  if (auto v = check_run_legality()) return *v;
  if (!d.v.legality.empty()) {
    d.v.reference_time.reset();
    d.v.speedup_check.reset();
    return stop(VerdictClass::kIllegal, Stage::kLegality, legality::describe(d.v.legality));
  }
  if (!all_pass) return stop(VerdictClass::kWrongAnswer, Stage::kVerify, numeric.first_failure);
  d.v.candidate_time = timing_from(*cand_done.result);
  // The rounds' paired ratios (one round: the ratio of the two medians, as the results report them when
  // the orchestrator could not read a round's file).
  if (d.v.reference_time && d.v.candidate_time) {
    d.v.speedup = paired_speedup(ref_rounds, cand_rounds);
    if (!d.v.speedup)
      d.v.speedup = paired_speedup({d.v.reference_time->median_ms}, {d.v.candidate_time->median_ms});
  }
  if (d.v.speedup && d.v.speedup_check)
    d.v.speedup = std::min(*d.v.speedup, d.v.speedup_check->recheck_speedup);
  d.v.verdict = VerdictClass::kOk;
  d.v.stage = Stage::kBenchmark;
  d.v.message = "all " + std::to_string(numeric.trials) + " trials within tolerance";
  if (d.v.speedup_check)
    d.v.message += "; speedup re-measured (" + std::to_string(d.v.speedup_check->event_speedup) +
                   "x by events, " + std::to_string(d.v.speedup_check->recheck_speedup) +
                   "x by wall clock), the smaller kept";
  if (d.v.speedup_check && d.v.speedup_check->disagreement())
    d.v.message += "; the two timing methods disagree by more than " +
                   std::to_string(SpeedupCheck::kTimingDisagreement) + "x: this speedup is not reliable";
  return finalize(d.v);
}

std::optional<Verdict> EvalJob::check_run_legality() {
  const json& cand_result = *cand_done.result;
  std::map<std::string, int> ops;
  if (cand_result.contains("torch_ops") && cand_result["torch_ops"].is_object())
    for (const auto& [op, n] : cand_result["torch_ops"].items()) ops[op] = n.template get<int>();
  d.v.legality = legality::check_dispatched_ops(ops, options.legality);
  const bool ref_mutates = ref_done.result && ref_done.result->value("inputs_mutated", false);
  for (auto& f : legality::findings_from_run(cand_result.value("findings", json::array()), ref_mutates,
                                             options.legality))
    d.v.legality.push_back(f);
  if (all_pass && options.legality.check_runtime_behaviour) {
    auto ref_checks = verify::read_output_file(run::checks_file(dirs.reference, run::Side::kReference));
    auto cand_checks = verify::read_output_file(run::checks_file(cand_dir, run::Side::kCandidate));
    if (!ref_checks.ok())
      return stop(VerdictClass::kInfraError, Stage::kVerify,
                  "unreadable reference check outputs: " + ref_checks.status().message());
    if (!cand_checks.ok()) {
      d.v.legality.push_back({"inconsistent_result",
                              "the candidate wrote no consistency outputs: " + cand_checks.status().message(),
                              0});
    } else {
      for (auto& f : consistency_findings(cand_result.value("checks", json::array()), ref_out, *ref_checks,
                                          *cand_checks, tol))
        d.v.legality.push_back(f);
    }
  }
  if (cand_result.contains("kernel_profile"))
    d.log += "\nkernel profile: " + cand_result["kernel_profile"].dump().substr(0, 4000);
  return std::nullopt;
}

}  // namespace musacoder::eval
