#include "commands.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "kernelbench/batch_report.h"
#include "mooreeval/candidate/extract.h"
#include "mooreeval/pipeline/batch.h"
#include "mooreeval/pipeline/replay.h"
#include "mooreeval/task/task.h"

namespace musacoder::tools {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int exit_for(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ? kExitBadInput
                                                                                       : kExitInfra;
}

int report_error(const Status& s) {
  std::cerr << "mooreeval: error: " << (s.message().empty() ? "unknown failure (no detail)" : s.message())
            << "\n";
  return exit_for(s);
}

// Opens (creates or truncates) an output file before any work, so that a path that cannot
// be written fails at once instead of after the evaluations.
Status open_output(const fs::path& path, std::ofstream& file) {
  if (path.empty()) return {};
  std::error_code ec;
  if (fs::is_directory(path, ec)) return invalid_argument("--out " + kernelbench::path_text(path) + " is a directory");
  file.open(path, std::ios::trunc);
  if (!file)
    return invalid_argument("--out " + kernelbench::path_text(path) + ": cannot write (" + std::strerror(errno) + ")");
  return {};
}

std::string seconds_text(double s) {
  char buf[32];
  if (s < 90)
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  else
    std::snprintf(buf, sizeof buf, "%.0f min %02.0f s", std::floor(s / 60), std::fmod(s, 60));
  return buf;
}

// "[n/N]" with elapsed time and an ETA from the mean time per finished candidate.
std::string progress(std::size_t done, std::size_t total, std::chrono::steady_clock::time_point start) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double eta = done ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : 0;
  return "[" + std::to_string(done) + "/" + std::to_string(total) + ", " + seconds_text(elapsed) +
         (done < total ? ", ETA " + seconds_text(eta) : std::string()) + "]";
}

void print_human(const eval::Verdict& v) {
  std::cout << "task:      " << v.task_id << " (" << v.backend << ")\n"
            << "verdict:   " << eval::verdict_name(v.verdict) << " [" << eval::stage_name(v.stage) << "]\n"
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

// The options that re-run `cmd.replay` (a verdict of the same task and candidate: checked, so that
// a replay never silently evaluates something else).
Result<eval::EvalOptions> replay_options(const EvalCommand& cmd, const task::TaskSpec& task,
                                         const eval::EvalOptions& options) {
  auto text = read_file(cmd.replay);
  if (!text.ok()) return text.status();
  json verdict = json::parse(*text, nullptr, false);
  if (verdict.is_discarded() || !verdict.is_object())
    return invalid_argument("--replay " + cmd.replay.string() + ": not a verdict JSON object");
  if (verdict.value("task", "") != task.id)
    return invalid_argument("--replay: the verdict is of task '" + verdict.value("task", "") + "', not '" + task.id +
                            "'");
  auto submission = read_file(cmd.candidate, options.max_submission_bytes + 1);
  if (!submission.ok()) return submission.status();
  auto extracted = candidate::extract_candidate(*submission, {options.max_submission_bytes});
  if (!extracted.ok() || extracted->source_sha256 != verdict.value("candidate_sha256", ""))
    return invalid_argument("--replay: the candidate is not the one the verdict evaluated (candidate_sha256)");
  return eval::options_for_replay(verdict, options);
}

}  // namespace

int run_eval(const EvalCommand& cmd, const eval::EvalOptions& given) {
  auto task = task::resolve_task(cmd.task, cmd.tasks_dir);
  if (!task.ok()) return report_error(task.status());
  std::error_code ec;
  if (!fs::exists(cmd.candidate, ec))
    return report_error(not_found("candidate file not found: " + cmd.candidate.string()));
  eval::EvalOptions options = given;
  if (!cmd.replay.empty()) {
    auto replayed = replay_options(cmd, *task, given);
    if (!replayed.ok()) return report_error(replayed.status());
    options = std::move(*replayed);
  }
  eval::Evaluator evaluator(options);
  if (auto st = evaluator.prepare(); !st.ok()) return report_error(st);
  eval::BatchJob job{*task, cmd.candidate, task->id};
  auto verdicts = eval::run_batch(evaluator, {job}, 1);
  const auto& v = verdicts.front();
  if (cmd.json) {
    std::cout << kernelbench::safe_dump(eval::to_json(v), 2) << "\n";
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
  std::ofstream file;
  if (Status st = open_output(cmd.out, file); !st.ok()) return report_error(st);
  const auto t_start = std::chrono::steady_clock::now();
  eval::EvalOptions batch_options = options;
  batch_options.workers = cmd.workers;
  eval::Evaluator evaluator(batch_options);
  if (auto st = evaluator.prepare(); !st.ok()) return report_error(st);
  const auto t_prepared = std::chrono::steady_clock::now();

  std::ostream& out = cmd.out.empty() ? std::cout : file;
  std::size_t finished = 0;
  auto verdicts = eval::run_batch(evaluator, *jobs, cmd.workers, [&](std::size_t i, const eval::Verdict& v) {
    json line = eval::to_json(v);
    line["sample"] = kernelbench::path_text((*jobs)[i].sample);
    line["label"] = (*jobs)[i].label;
    out << kernelbench::safe_dump(line) << "\n" << std::flush;
    if (!cmd.quiet)
      std::cerr << progress(++finished, jobs->size(), t_prepared) << " [" << eval::verdict_name(v.verdict) << "] "
                << (*jobs)[i].label << "\n";
  });
  json summary = kernelbench::summarize_batch(verdicts);
  // Start-up (toolchain probe, lean shim, warm runners) apart from the evaluations, so
  // that throughput can be read in steady state.
  const auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  summary["seconds"] = {{"prepare", seconds(t_start, t_prepared)},
                        {"evaluations", seconds(t_prepared, std::chrono::steady_clock::now())}};
  if (!cmd.quiet) {
    std::vector<kernelbench::LabelledVerdict> rows;
    for (std::size_t i = 0; i < verdicts.size(); ++i) rows.push_back({(*jobs)[i].label, &verdicts[i]});
    std::cerr << kernelbench::verdict_table(rows);
  }
  std::cerr << "summary: " << kernelbench::safe_dump(summary) << "\n";
  if (!cmd.out.empty()) out << kernelbench::safe_dump(json{{"summary", summary}}) << "\n" << std::flush;
  if (!cmd.out.empty() && !out)
    return report_error(internal_error("--out " + kernelbench::path_text(cmd.out) + ": write failed"));
  return exit_for(verdicts);
}

namespace {

// The launcher's candidates: the suite's reference solutions (expected ok), then the
// corpus of the manifest (each with its expected verdict; some expected ok).
struct LaunchPlan {
  std::vector<eval::BatchJob> jobs;
  std::vector<std::string> expected;  // verdict class per job
  std::size_t solutions = 0;          // jobs[0, solutions) are solutions, the rest corpus
};

Status add_corpus(const LaunchCommand& cmd, const std::string& backend, LaunchPlan& plan) {
  auto manifest_text = read_file(cmd.broken_dir / "manifest.json");
  if (!manifest_text.ok()) return manifest_text.status();
  json manifest = json::parse(*manifest_text, nullptr, false);
  if (!manifest.is_array()) return invalid_argument("manifest.json is not a JSON list");
  for (const auto& m : manifest) {
    if (!m.is_object()) return invalid_argument("manifest.json: every entry must be an object");
    auto backends = m.value("backends", std::vector<std::string>{});
    if (std::find(backends.begin(), backends.end(), backend) == backends.end()) continue;
    auto task = task::resolve_task(m.value("task", ""), cmd.tasks_dir);
    if (!task.ok()) return task.status();
    const std::string file = m.value("file", "");
    plan.jobs.push_back({*task, cmd.broken_dir / file, "corpus " + file});
    plan.expected.push_back(m.value("expected", "?"));
  }
  return {};
}

bool as_expected(const std::string& expected, const eval::Verdict& v) {
  return expected == eval::verdict_name(v.verdict) && (expected != "ok" || v.reward.total >= 0.6);
}

// Prints the table and the two summaries (solutions; corpus); returns the mismatch count.
int print_launch_report(const LaunchPlan& plan, const std::vector<eval::Verdict>& verdicts, json& summary) {
  std::vector<kernelbench::LabelledVerdict> rows;
  std::vector<eval::Verdict> solutions(verdicts.begin(), verdicts.begin() + static_cast<long>(plan.solutions));
  int mismatches = 0, solutions_ok = 0, corpus_ok = 0, caught = 0, corpus_expected_ok = 0;
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    const bool good = as_expected(plan.expected[i], verdicts[i]);
    mismatches += !good;
    if (i < plan.solutions) {
      solutions_ok += good;
    } else {
      corpus_ok += good;
      corpus_expected_ok += plan.expected[i] == "ok";
      caught += good && plan.expected[i] != "ok";
    }
    rows.push_back({(good ? "  " : "! ") + plan.jobs[i].label + " (expect " + plan.expected[i] + ")", &verdicts[i]});
  }
  const std::size_t corpus = verdicts.size() - plan.solutions;
  summary = {{"solutions", kernelbench::summarize_batch(solutions)},
             {"corpus",
              {{"entries", corpus},
               {"as_expected", corpus_ok},
               {"failures_caught", caught},
               {"expected_ok", corpus_expected_ok}}}};
  std::cout << kernelbench::verdict_table(rows);
  std::cout << "solutions: " << solutions_ok << "/" << plan.solutions << " reference solutions verified ok\n"
            << "  summary: " << kernelbench::safe_dump(summary["solutions"]) << "\n";
  std::cout << "corpus:    " << corpus_ok << "/" << corpus << " corpus entries got their expected verdict ("
            << caught << " faulty candidates caught, " << corpus_expected_ok << " expected ok)\n";
  std::cout << (mismatches ? std::to_string(mismatches) + " candidate(s) did not get the expected verdict (marked !)"
                           : "every candidate got its expected verdict")
            << "\n";
  return mismatches;
}

}  // namespace

int run_launch(const LaunchCommand& cmd, const eval::EvalOptions& options) {
  if (cmd.reference_impl != "torch")
    return report_error(
        invalid_argument("--reference-impl '" + cmd.reference_impl + "' is not supported (torch)"));
  if (options.backend != build::Backend::kMusa &&
      (!cmd.musa_sdk_version.empty() || !cmd.torch_musa_version.empty()))
    std::cerr << "mooreeval: note: --musa-sdk-version/--torch-musa apply to --backend musa only; ignored\n";
  // The output file and the suite before any work (the toolchain is probed next, so
  // that a missing toolchain is reported before missing solutions for its backend).
  std::ofstream file;
  if (Status st = open_output(cmd.out, file); !st.ok()) return report_error(st);
  auto suite = task::load_suite(cmd.tasks_dir);
  if (!suite.ok()) return report_error(suite.status());
  eval::EvalOptions launch_options = options;
  launch_options.workers = cmd.workers;
  launch_options.musa_sdk_version = cmd.musa_sdk_version;
  launch_options.torch_musa_version = cmd.torch_musa_version;
  eval::Evaluator evaluator(launch_options);
  if (auto st = evaluator.prepare(); !st.ok()) return report_error(st);
  const std::string backend = build::backend_name(options.backend);
  auto solutions = eval::discover_samples(*suite, cmd.solutions_dir / backend);
  if (!solutions.ok()) return report_error(solutions.status());
  LaunchPlan plan;
  plan.jobs = std::move(*solutions);
  for (auto& j : plan.jobs) j.label = "solution " + j.task.id;
  plan.solutions = plan.jobs.size();
  plan.expected.assign(plan.solutions, "ok");
  if (!cmd.broken_dir.empty())
    if (Status st = add_corpus(cmd, backend, plan); !st.ok()) return report_error(st);
  std::cerr << "mooreeval launch: " << plan.jobs.size() << " candidates on " << backend << " ("
            << plan.solutions << " reference solutions, " << plan.jobs.size() - plan.solutions
            << " corpus entries with known verdicts) with " << cmd.workers << " workers\n";
  const auto start = std::chrono::steady_clock::now();
  std::size_t finished = 0;
  auto verdicts = eval::run_batch(evaluator, plan.jobs, cmd.workers, [&](std::size_t i, const eval::Verdict& v) {
    const bool good = as_expected(plan.expected[i], v);
    std::cerr << "  " << progress(++finished, plan.jobs.size(), start) << " [" << eval::verdict_name(v.verdict)
              << "] " << plan.jobs[i].label << (good ? "" : "  (expected " + plan.expected[i] + ")") << "\n";
    if (file) {
      json line = eval::to_json(v);
      line["label"] = plan.jobs[i].label;
      line["sample"] = kernelbench::path_text(plan.jobs[i].sample);
      line["expected"] = plan.expected[i];
      file << kernelbench::safe_dump(line) << "\n" << std::flush;
    }
  });
  json summary;
  const int mismatches = print_launch_report(plan, verdicts, summary);
  if (file) file << kernelbench::safe_dump(json{{"summary", summary}}) << "\n" << std::flush;
  if (!cmd.out.empty() && !file)
    return report_error(internal_error("--out " + kernelbench::path_text(cmd.out) + ": write failed"));
  int infra = 0;
  for (const auto& v : verdicts) infra += !v.scored();
  return infra ? kExitInfra : mismatches ? kExitCandidateFailed : kExitOk;
}

}  // namespace musacoder::tools
