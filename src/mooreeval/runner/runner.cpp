#include "mooreeval/runner/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "core/files.h"
#include "mooreeval/runner/protocol.h"

#ifndef MOOREEVAL_SOURCE_RUNNER_DIR
#define MOOREEVAL_SOURCE_RUNNER_DIR ""
#endif

namespace musacoder::run {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

ProcessOptions process_options(const RunnerOptions& options, const RunnerCall& call, const fs::path& job_path,
                               const fs::path& result_path, const fs::path& phase_path) {
  ProcessOptions p;
  const std::vector<std::string> args = {
      call.mode,          "--job", job_path.string(), "--result", result_path.string(), "--phase-file",
      phase_path.string()};
  p.env_set = runner_environment(options);
  if (options.warm && call.mode != "probe") {
    // The client hands the job to the zygote; the job's per-call environment travels along.
    p.argv = {options.warm->client_path().string(), options.warm->socket_path().string()};
    p.env_set["MOOREEVAL_WARM_ENV"] = json(call.env).dump();
  } else {
    p.argv = {options.python, "-m", "mooreeval_runner"};
  }
  p.argv.insert(p.argv.end(), args.begin(), args.end());
  for (const auto& [k, v] : call.env) p.env_set[k] = v;
  p.cwd = call.work_dir.string();
  p.deadline = call.deadline;
  p.max_output_bytes = options.max_log_bytes;
  p.keep_stdin_open = true;
  return p;
}

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The outcome of a runner that has just ended (now), spawned at `spawned_at` (wall_now()).
RunnerOutcome collect(ProcessResult process, const fs::path& result_path, const fs::path& phase_path,
                      double spawned_at) {
  RunnerOutcome out;
  out.spawned_at = spawned_at;
  out.ended_at = wall_now();
  out.process = std::move(process);
  if (auto phase = read_file(phase_path, 4096); phase.ok()) out.phase = *phase;
  auto text = read_file(result_path, 64 << 20);
  if (!text.ok()) {
    out.error = "the runner wrote no result (" + out.process.describe() + ")";
    return out;
  }
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("status")) {
    out.error = "the runner's result is not valid JSON";
    return out;
  }
  out.result = std::move(j);
  return out;
}

struct CallFiles {
  fs::path job, result, phase;
};

Result<CallFiles> prepare(const RunnerCall& call) {
  CallFiles f{job_file(call.work_dir, call.mode), result_file(call.work_dir, call.mode),
              phase_file(call.work_dir, call.mode)};
  std::error_code ec;
  fs::remove(f.result, ec);
  fs::remove(f.phase, ec);
  MC_RETURN_IF_ERROR(write_file_atomic(f.job, call.job.dump()));
  return f;
}

Result<ProcessOptions> sandboxed(const RunnerCall& call, ProcessOptions p) {
  if (!call.sandbox) return p;
  return call.sandbox(std::move(p));
}

}  // namespace

Result<std::unique_ptr<RunnerSession>> RunnerSession::start(const RunnerOptions& options,
                                                            const RunnerCall& call) {
  auto files = prepare(call);
  if (!files.ok()) return files.status();
  auto process = sandboxed(call, process_options(options, call, files->job, files->result, files->phase));
  if (!process.ok()) return process.status();
  const double spawned_at = wall_now();
  auto child = Subprocess::spawn(*process);
  if (!child.ok()) return child.status();
  std::unique_ptr<RunnerSession> s(new RunnerSession());
  s->spawned_at_ = spawned_at;
  s->process_ = std::move(child).value();
  s->result_path_ = files->result;
  s->phase_path_ = files->phase;
  return s;
}

bool RunnerSession::wait_for(const std::string& line) {
  while (auto got = process_->read_control_line()) {
    if (*got == line) return true;
  }
  return false;
}

void RunnerSession::command(const std::string& word) {
  process_->send_stdin(word + "\n", /*close_after=*/false);
}

void RunnerSession::set_deadline(std::chrono::milliseconds from_now) {
  process_->set_deadline(from_now);
}

RunnerOutcome RunnerSession::finish() {
  process_->send_stdin("", /*close_after=*/true);
  return collect(process_->wait(), result_path_, phase_path_, spawned_at_);
}

Result<RunnerOutcome> run_runner(const RunnerOptions& options, const RunnerCall& call) {
  auto files = prepare(call);
  if (!files.ok()) return files.status();
  auto p = process_options(options, call, files->job, files->result, files->phase);
  p.keep_stdin_open = false;
  auto wrapped = sandboxed(call, std::move(p));
  if (!wrapped.ok()) return wrapped.status();
  const double spawned_at = wall_now();
  auto process = run_process(*wrapped);
  if (!process.ok()) return process.status();
  return collect(std::move(process).value(), files->result, files->phase, spawned_at);
}

json runner_seconds(const RunnerOutcome& o) {
  json s = json::object();
  if (!o.result) return s;
  if (o.result->contains("seconds") && (*o.result)["seconds"].is_object()) s = (*o.result)["seconds"];
  const json clock = o.result->value("clock", json::object());
  if (!clock.is_object() || !clock.contains("start") || !clock.contains("end") ||
      !clock["start"].is_number() || !clock["end"].is_number() || o.spawned_at <= 0 || o.ended_at <= 0)
    return s;
  // Rounded to 0.1 ms; never negative (the two clocks are one, but a job's own numbers are
  // what it says they are).
  auto part = [](double v) { return std::max(0.0, std::round(v * 1e4) / 1e4); };
  s["start"] = part(clock["start"].get<double>() - o.spawned_at);
  s["end"] = part(o.ended_at - clock["end"].get<double>());
  return s;
}

std::map<std::string, std::string> runner_environment(const RunnerOptions& options) {
  std::map<std::string, std::string> env = options.extra_env;
  std::string pythonpath = options.runner_dir.string();
  if (const char* existing = std::getenv("PYTHONPATH"); existing && *existing)
    pythonpath += ":" + std::string(existing);
  env["PYTHONPATH"] = pythonpath;
  env["PYTHONUNBUFFERED"] = "1";
  env["PYTHONDONTWRITEBYTECODE"] = "1";
  // OpenMP workers (PyTorch's CPU ops, the candidates' `omp parallel` loops) sleep as soon as a parallel
  // region ends instead of spinning for their wait budget: on a loaded machine a spinning pool stays runnable
  // for tens of milliseconds after forward returned, which the busy-thread check rightly counts as work left
  // running — and an honest kernel was rejected as `busy_background_thread`. Reference and candidate share
  // the setting.
  env.emplace("OMP_WAIT_POLICY", "PASSIVE");  // unless extra_env chose one
  return env;
}

Result<fs::path> locate_runner_dir(const std::string& explicit_dir) {
  std::string dir = explicit_dir;
  if (dir.empty())
    if (const char* env = std::getenv("MOOREEVAL_RUNNER_DIR"); env && *env) dir = env;
  if (dir.empty()) dir = MOOREEVAL_SOURCE_RUNNER_DIR;
  std::error_code ec;
  if (dir.empty() || !fs::is_regular_file(fs::path(dir) / "mooreeval_runner" / "__main__.py", ec))
    return not_found("the Python runner (mooreeval_runner) was not found in '" + dir +
                     "'; pass --runner-dir or set MOOREEVAL_RUNNER_DIR");
  return fs::absolute(dir, ec);
}

}  // namespace musacoder::run
