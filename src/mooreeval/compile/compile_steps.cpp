#include "mooreeval/compile/compile_steps.h"

#include <memory>
#include <utility>

#include "process/subprocess.h"

namespace musacoder::build {

using Clock = std::chrono::steady_clock;

namespace {

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

BuildOutcome worse(BuildOutcome a, BuildOutcome b) {
  return static_cast<int>(b) > static_cast<int>(a) ? b : a;
}

}  // namespace

BuildOutcome run_compile_steps(const std::vector<CompileStep>& compiles, const CompileStep& link,
                               const std::filesystem::path& cwd, Clock::time_point deadline,
                               const ProcessWrapper& sandbox, std::string& log,
                               std::map<std::string, double>* step_seconds) {
  auto options_for = [&](const CompileStep& step) -> Result<ProcessOptions> {
    ProcessOptions p;
    p.argv = step.argv;
    p.cwd = cwd.string();
    p.deadline = std::max(std::chrono::milliseconds(1),
                          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    return sandbox ? sandbox(std::move(p)) : p;
  };
  auto record = [&](const CompileStep& step, const ProcessResult& r) {
    log += "$ " + joined(step.argv) + "\n" + r.stdout_text + r.stderr_text;
    if (step_seconds)
      (*step_seconds)[&step == &link ? "link" : std::filesystem::path(step.argv[0]).filename().string()] +=
          r.wall_seconds;
    if (r.timed_out) return BuildOutcome::kTimeout;
    if (!r.succeeded()) {
      log += "[" + step.argv[0] + " " + r.describe() + "]\n";
      return r.signaled ? BuildOutcome::kInfraError : BuildOutcome::kCompileError;
    }
    return BuildOutcome::kOk;
  };
  std::vector<std::pair<const CompileStep*, std::unique_ptr<Subprocess>>> running;
  BuildOutcome outcome = BuildOutcome::kOk;
  for (const auto& step : compiles) {
    if (Clock::now() >= deadline) {
      outcome = BuildOutcome::kTimeout;
      break;
    }
    auto options = options_for(step);
    auto child =
        options.ok() ? Subprocess::spawn(*options) : Result<std::unique_ptr<Subprocess>>(options.status());
    if (!child.ok()) {
      log += child.status().message() + "\n";
      outcome = BuildOutcome::kInfraError;
      break;
    }
    running.emplace_back(&step, std::move(child).value());
  }
  // Wait for whatever started, even after a failure, so no compiler outlives the call.
  for (auto& [step, child] : running) outcome = worse(outcome, record(*step, child->wait()));
  if (outcome != BuildOutcome::kOk) return outcome;
  if (Clock::now() >= deadline) return BuildOutcome::kTimeout;
  auto link_options = options_for(link);
  auto r = link_options.ok() ? run_process(*link_options) : Result<ProcessResult>(link_options.status());
  if (!r.ok()) {
    log += r.status().message() + "\n";
    return BuildOutcome::kInfraError;
  }
  return record(link, *r);
}

}  // namespace musacoder::build
