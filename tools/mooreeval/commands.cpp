#include "commands.h"

#include <chrono>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "eval/batch.h"
#include "report/summary.h"
#include "task/task.h"

namespace musacoder::tools {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int exit_for(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ? kExitBadInput
                                                                                       : kExitInfra;
}

int report_error(const Status& s) {
  std::cerr << "mooreeval: error: " << s.message() << "\n";
  return exit_for(s);
}

void print_human(const eval::Verdict& v) {
  std::cout << "task:      " << v.task_id << " (" << v.backend << ")\n"
            << "verdict:   " << eval::verdict_name(v.verdict) << " [" << v.stage << "]\n"
            << "message:   " << v.message << "\n";
  if (v.scored()) {
    std::cout << "reward:    " << v.reward.total << " (" << v.reward_scheme << ": compile "
              << v.reward.compile_part << ", correctness " << v.reward.correctness_part << ", performance "
              << v.reward.performance_part << ")\n";
  } else {
    std::cout << "reward:    none (infrastructure failure, not scored)\n";
  }
  std::cout << "trials:    " << v.passed << "/" << v.trials << " passed, max abs err " << v.max_abs_error
            << ", max rel err " << v.max_rel_error << "\n";
  if (v.reference_time && v.candidate_time)
    std::cout << "time:      reference " << v.reference_time->median_ms << " ms, candidate "
              << v.candidate_time->median_ms << " ms (median), speedup " << v.speedup.value_or(0) << "x\n";
  std::cout << "seconds:   build " << v.seconds.build << (v.cache_hit ? " (cached)" : "") << ", run "
            << v.seconds.run << ", benchmark " << v.seconds.benchmark << ", total " << v.seconds.total
            << "\n";
  if (v.verdict != eval::VerdictClass::kOk && !v.log.empty()) std::cout << "log:\n" << v.log << "\n";
}

int exit_for(const std::vector<eval::Verdict>& verdicts) {
  bool infra = false, failed = false;
  for (const auto& v : verdicts) {
    infra |= !v.scored();
    failed |= v.verdict != eval::VerdictClass::kOk;
  }
  return infra ? kExitInfra : failed ? kExitCandidateFailed : kExitOk;
}

}  // namespace

int run_eval(const EvalCommand& cmd, const eval::EvalOptions& options) {
  auto task = task::resolve_task(cmd.task, cmd.tasks_dir);
  if (!task.ok()) return report_error(task.status());
  std::error_code ec;
  if (!fs::exists(cmd.candidate, ec))
    return report_error(not_found("candidate file not found: " + cmd.candidate.string()));
  eval::Evaluator evaluator(options);
  if (auto st = evaluator.prepare(); !st.ok()) return report_error(st);
  eval::BatchJob job{*task, cmd.candidate, task->id};
  auto verdicts = eval::run_batch(evaluator, {job}, 1);
  const auto& v = verdicts.front();
  if (cmd.json) {
    std::cout << eval::to_json(v).dump(2) << "\n";
  } else {
    print_human(v);
  }
  return exit_for(verdicts);
}

int run_eval_batch(const BatchCommand& cmd, const eval::EvalOptions& options) {
  auto suite = task::load_suite(cmd.tasks_dir);
  if (!suite.ok()) return report_error(suite.status());
  auto jobs = eval::discover_samples(*suite, cmd.samples_dir);
  if (!jobs.ok()) return report_error(jobs.status());
  const auto t_start = std::chrono::steady_clock::now();
  eval::EvalOptions batch_options = options;
  batch_options.workers = cmd.workers;
  eval::Evaluator evaluator(batch_options);
  if (auto st = evaluator.prepare(); !st.ok()) return report_error(st);
  const auto t_prepared = std::chrono::steady_clock::now();

  std::ofstream file;
  if (!cmd.out.empty()) {
    file.open(cmd.out, std::ios::trunc);
    if (!file) return report_error(invalid_argument("cannot write " + cmd.out.string()));
  }
  std::ostream& out = cmd.out.empty() ? std::cout : file;
  auto verdicts = eval::run_batch(evaluator, *jobs, cmd.workers, [&](std::size_t i, const eval::Verdict& v) {
    json line = eval::to_json(v);
    line["sample"] = (*jobs)[i].sample.string();
    line["label"] = (*jobs)[i].label;
    out << line.dump() << "\n" << std::flush;
    if (!cmd.quiet) std::cerr << "[" << eval::verdict_name(v.verdict) << "] " << (*jobs)[i].label << "\n";
  });
  json summary = report::summarize_batch(verdicts);
  // Start-up (toolchain probe, lean shim, warm runners) apart from the evaluations, so
  // that throughput can be read in steady state.
  const auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  summary["seconds"] = {{"prepare", seconds(t_start, t_prepared)},
                        {"evaluations", seconds(t_prepared, std::chrono::steady_clock::now())}};
  if (!cmd.quiet) {
    std::vector<report::LabelledVerdict> rows;
    for (std::size_t i = 0; i < verdicts.size(); ++i) rows.push_back({(*jobs)[i].label, &verdicts[i]});
    std::cerr << report::verdict_table(rows);
  }
  std::cerr << "summary: " << summary.dump() << "\n";
  if (!cmd.out.empty()) out << json{{"summary", summary}}.dump() << "\n";
  return exit_for(verdicts);
}

int run_launch(const LaunchCommand& cmd, const eval::EvalOptions& options) {
  if (cmd.reference_impl != "torch")
    return report_error(
        invalid_argument("--reference-impl '" + cmd.reference_impl + "' is not supported (torch)"));
  if (options.backend != build::Backend::kMusa &&
      (!cmd.musa_sdk_version.empty() || !cmd.torch_musa_version.empty()))
    std::cerr << "mooreeval: note: --musa-sdk-version/--torch-musa apply to --backend musa only; ignored\n";
  eval::EvalOptions launch_options = options;
  launch_options.workers = cmd.workers;
  launch_options.musa_sdk_version = cmd.musa_sdk_version;
  launch_options.torch_musa_version = cmd.torch_musa_version;
  eval::Evaluator evaluator(launch_options);
  if (auto st = evaluator.prepare(); !st.ok()) return report_error(st);

  auto suite = task::load_suite(cmd.tasks_dir);
  if (!suite.ok()) return report_error(suite.status());
  const std::string backend = build::backend_name(options.backend);
  auto jobs = eval::discover_samples(*suite, cmd.solutions_dir / backend);
  if (!jobs.ok()) return report_error(jobs.status());
  std::vector<std::string> expected(jobs->size(), "ok");
  for (auto& j : *jobs) j.label = "solution " + j.task.id;

  // Broken candidates with their expected verdicts, for this backend.
  if (!cmd.broken_dir.empty()) {
    auto manifest_text = read_file(cmd.broken_dir / "manifest.json");
    if (!manifest_text.ok()) return report_error(manifest_text.status());
    json manifest = json::parse(*manifest_text, nullptr, false);
    if (!manifest.is_array()) return report_error(invalid_argument("manifest.json is not a JSON list"));
    for (const auto& m : manifest) {
      auto backends = m.value("backends", std::vector<std::string>{});
      if (std::find(backends.begin(), backends.end(), backend) == backends.end()) continue;
      auto task = task::resolve_task(m.value("task", ""), cmd.tasks_dir);
      if (!task.ok()) return report_error(task.status());
      jobs->push_back({*task, cmd.broken_dir / m.value("file", ""), "broken " + m.value("file", "")});
      expected.push_back(m.value("expected", "?"));
    }
  }

  std::ofstream file;
  if (!cmd.out.empty()) file.open(cmd.out, std::ios::trunc);
  std::cerr << "mooreeval launch: " << jobs->size() << " candidates on " << backend << " with " << cmd.workers
            << " workers\n";
  auto verdicts = eval::run_batch(evaluator, *jobs, cmd.workers, [&](std::size_t i, const eval::Verdict& v) {
    std::cerr << "  [" << eval::verdict_name(v.verdict) << "] " << (*jobs)[i].label << "\n";
    if (file) {
      json line = eval::to_json(v);
      line["label"] = (*jobs)[i].label;
      line["expected"] = expected[i];
      file << line.dump() << "\n" << std::flush;
    }
  });
  std::vector<report::LabelledVerdict> rows;
  int mismatches = 0, infra = 0;
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    const bool as_expected = expected[i] == eval::verdict_name(verdicts[i].verdict) &&
                             (expected[i] != "ok" || verdicts[i].reward.total >= 0.6);
    mismatches += !as_expected;
    infra += !verdicts[i].scored();
    rows.push_back(
        {(as_expected ? "  " : "! ") + (*jobs)[i].label + " (expect " + expected[i] + ")", &verdicts[i]});
  }
  std::cout << report::verdict_table(rows);
  std::cout << "summary: " << report::summarize_batch(verdicts).dump() << "\n";
  std::cout << (mismatches ? std::to_string(mismatches) + " candidate(s) did not get the expected verdict"
                           : "every candidate got its expected verdict")
            << "\n";
  return infra ? kExitInfra : mismatches ? kExitCandidateFailed : kExitOk;
}

}  // namespace musacoder::tools
