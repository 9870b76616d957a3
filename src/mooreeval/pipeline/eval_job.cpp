#include "mooreeval/pipeline/eval_job.h"

#include "core/text.h"

namespace musacoder::eval {

using nlohmann::json;

namespace {

VerdictClass class_from_runner_status(const std::string& status) {
  if (status == "format_error") return VerdictClass::kFormatError;
  if (status == "runtime_error") return VerdictClass::kRuntimeError;
  if (status == "wrong_answer") return VerdictClass::kWrongAnswer;
  if (status == "illegal") return VerdictClass::kIllegal;
  if (status == "timeout") return VerdictClass::kTimeout;
  if (status == "ok") return VerdictClass::kOk;
  return VerdictClass::kInfraError;
}

}  // namespace

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string key(run::JobKey k) {
  return std::string(run::job_key_name(k));
}
std::string gate(run::Gate g) {
  return std::string(run::gate_name(g));
}
std::string command(run::Command c) {
  return std::string(run::command_name(c));
}

std::string runner_log(const run::RunnerOutcome& o) {
  std::string s = o.process.stderr_text;
  if (!o.process.stdout_text.empty()) s = o.process.stdout_text + "\n" + s;
  if (o.result && o.result->contains("traceback")) s += "\n" + o.result->value("traceback", "");
  return s;
}

Verdict& classify_candidate_failure(Draft& d, const run::RunnerOutcome& o, Stage stage,
                                    double max_run_seconds) {
  d.log += runner_log(o);
  const bool candidate_code_ran = run::fault_of_phase(o.phase) == run::Fault::kCandidate;
  if (o.process.timed_out) {
    return d.fail(VerdictClass::kTimeout, stage,
                  "the candidate exceeded --max-run-seconds (" + std::to_string(max_run_seconds) + " s)");
  }
  if (o.result) {
    std::string status = o.result->value("status", "infra_error");
    std::string message = o.result->value("message", "");
    return d.fail(class_from_runner_status(status), stage, message);
  }
  if (candidate_code_ran) {
    return d.fail(VerdictClass::kRuntimeError, stage, "the candidate process died: " + o.process.describe());
  }
  return d.fail(VerdictClass::kInfraError, stage, "the runner died before the candidate ran: " + o.error);
}

void note_runner_seconds(Verdict& v, const std::string& side, const run::RunnerOutcome& o) {
  if (json s = run::runner_seconds(o); !s.empty()) v.seconds.runners[side] = std::move(s);
}

std::optional<TimingStats> timing_from(const json& result) {
  if (!result.contains("timing") || !result["timing"].is_object()) return std::nullopt;
  const json& t = result["timing"];
  TimingStats s;
  s.median_ms = t.value("median_ms", 0.0);
  s.p10_ms = t.value("p10_ms", 0.0);
  s.p90_ms = t.value("p90_ms", 0.0);
  s.min_ms = t.value("min_ms", 0.0);
  s.iters = t.value("iters", 0);
  if (t.contains("host_ms") && t["host_ms"].is_number()) s.host_ms = t["host_ms"].get<double>();
  if (t.contains("head_start_ms") && t["head_start_ms"].is_number())
    s.head_start_ms = t["head_start_ms"].get<double>();
  if (t.contains("host_behind_retries") && t["host_behind_retries"].is_number_integer())
    s.host_behind_retries = t["host_behind_retries"].get<int>();
  if (t.contains("rounds_median_ms") && t["rounds_median_ms"].is_array())
    for (const json& m : t["rounds_median_ms"])
      if (m.is_number()) s.rounds_median_ms.push_back(m.get<double>());
  return s;
}

EvalJob::EvalJob(Evaluator& evaluator, const task::TaskSpec& task)
    : ev(evaluator),
      options(evaluator.options_),
      task(task),
      t_start(Clock::now()),
      d{evaluator.new_verdict(task), {}},
      tol{task.rtol.value_or(options.rtol), task.atol.value_or(options.atol)},
      max_run_seconds(options.max_run.count() / 1000.0) {}

Verdict EvalJob::finalize(Verdict& v) {
  ev.score(v);
  v.log = truncate_middle(sanitize_utf8(d.log), options.max_log_bytes);
  v.seconds.total = since(t_start);
  return v;
}

Verdict EvalJob::stop(VerdictClass c, Stage stage, const std::string& message) {
  return finalize(d.fail(c, stage, message));
}

void EvalJob::slot_lap(const char* step) {
  const auto now = Clock::now();
  d.v.seconds.slot[step] += std::chrono::duration<double>(now - slot_last).count();
  slot_last = now;
}

}  // namespace musacoder::eval
