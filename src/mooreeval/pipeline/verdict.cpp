#include "mooreeval/pipeline/verdict.h"

namespace musacoder::eval {

using nlohmann::json;

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kNone: return "";
    case Stage::kQueue: return "queue";
    case Stage::kExtract: return "extract";
    case Stage::kPrepare: return "prepare";
    case Stage::kInspect: return "inspect";
    case Stage::kLegality: return "legality";
    case Stage::kBuild: return "build";
    case Stage::kRun: return "run";
    case Stage::kVerify: return "verify";
    case Stage::kBenchmark: return "benchmark";
  }
  return "";
}

const char* verdict_name(VerdictClass v) {
  switch (v) {
    case VerdictClass::kOk:
      return "ok";
    case VerdictClass::kFormatError:
      return "format_error";
    case VerdictClass::kCompileError:
      return "compile_error";
    case VerdictClass::kRuntimeError:
      return "runtime_error";
    case VerdictClass::kTimeout:
      return "timeout";
    case VerdictClass::kWrongAnswer:
      return "wrong_answer";
    case VerdictClass::kIllegal:
      return "illegal";
    case VerdictClass::kInfraError:
      return "infra_error";
  }
  return "?";
}

namespace {

json timing_json(const std::optional<TimingStats>& t) {
  if (!t) return nullptr;
  json j = {{"median_ms", t->median_ms},
            {"p10_ms", t->p10_ms},
            {"p90_ms", t->p90_ms},
            {"min_ms", t->min_ms},
            {"iters", t->iters}};
  if (t->host_ms) j["host_ms"] = *t->host_ms;
  if (t->head_start_ms) j["head_start_ms"] = *t->head_start_ms;
  if (t->host_behind_retries) j["host_behind_retries"] = *t->host_behind_retries;
  if (!t->rounds_median_ms.empty()) j["rounds_median_ms"] = t->rounds_median_ms;
  return j;
}

json speedup_check_json(const std::optional<SpeedupCheck>& c) {
  if (!c) return nullptr;
  return {{"threshold", c->threshold},
          {"event_speedup", c->event_speedup},
          {"recheck_speedup", c->recheck_speedup},
          {"reference_ms", c->reference_ms},
          {"candidate_ms", c->candidate_ms},
          {"method", c->method},
          {"disagreement", c->disagreement()}};
}

}  // namespace

json to_json(const Verdict& v) {
  json legality = json::array();
  for (const auto& f : v.legality)
    legality.push_back({{"rule", f.rule}, {"message", f.message}, {"line", f.line}});
  json reward = nullptr;
  if (v.scored()) {
    reward = {{"total", v.reward.total},
              {"scheme", v.reward_scheme},
              {"compile", v.reward.compile_part},
              {"correctness", v.reward.correctness_part},
              {"performance", v.reward.performance_part}};
  }
  return {
      {"schema", "mooreeval.verdict/1"},
      {"task", v.task_id},
      {"backend", v.backend},
      {"verdict", verdict_name(v.verdict)},
      {"message", v.message},
      {"stage", stage_name(v.stage)},
      {"reward", reward},
      {"compiled", v.compiled},
      {"trials", v.trials},
      {"passed", v.passed},
      {"pass_fraction", v.trials ? static_cast<double>(v.passed) / v.trials : 0.0},
      {"max_abs_error", v.max_abs_error},
      {"max_rel_error", v.max_rel_error},
      {"reference_time", timing_json(v.reference_time)},
      {"candidate_time", timing_json(v.candidate_time)},
      {"speedup", v.speedup ? json(*v.speedup) : json(nullptr)},
      {"speedup_check", speedup_check_json(v.speedup_check)},
      {"seconds",
       {{"extract", v.seconds.extract},
        {"inspect", v.seconds.inspect},
        {"build", v.seconds.build},
        {"run", v.seconds.run},
        {"benchmark", v.seconds.benchmark},
        {"total", v.seconds.total},
        {"run_wait", v.seconds.run_wait},
        {"build_wait", v.seconds.build_wait},
        {"build_steps", v.seconds.build_steps},
        {"slot", v.seconds.slot},
        {"runners", v.seconds.runners}}},
      {"cache_hit", v.cache_hit},
      {"inspect_cached", v.inspect_cached},
      {"build_path", v.build_path.empty() ? json(nullptr) : json(v.build_path)},
      {"attempts", v.attempts},
      {"legality", legality},
      {"candidate_sha256", v.candidate_sha256},
      {"log", v.log},
      {"config", v.config},
  };
}

}  // namespace musacoder::eval
