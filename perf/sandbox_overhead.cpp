// sandbox_overhead_bench [--iters N] [--python python3]
// Spawn-to-exit wall time of the same commands plain and inside the per-job sandbox
// (bwrap + seccomp + rlimits + per-job uid), side by side: median and p90 in ms, the
// ratio and the added milliseconds. A job is one sandboxed process (the target:
// under 50 ms added per job on CPU); one evaluation runs 5 of them (inspect, reference,
// candidate, compiler, linker).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/files.h"
#include "process/subprocess.h"
#include "sandbox/sandbox.h"

namespace {

using namespace musacoder;
using Clock = std::chrono::steady_clock;

struct Stats {
  double median = 0, p90 = 0;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 9 / 10)]};
}

// Runs `make()` n times; returns wall ms per run, or empty on failure.
template <typename Make>
std::vector<double> time_runs(int n, Make make) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    auto options = make();
    if (!options.ok()) {
      std::fprintf(stderr, "wrap failed: %s\n", options.status().message().c_str());
      return {};
    }
    auto r = run_process(*options);
    double dt = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!r.ok() || !r->succeeded()) {
      std::fprintf(stderr, "run failed: %s %s\n",
                   r.ok() ? r->describe().c_str() : r.status().message().c_str(),
                   r.ok() ? r->stderr_text.c_str() : "");
      return {};
    }
    ms.push_back(dt);
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 40;
  std::string python = "python3";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--iters"))
      iters = std::max(3, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--python"))
      python = argv[i + 1];
  }
  sandbox::SandboxOptions o;
  o.mode = sandbox::SandboxMode::kOn;
  o.python = python;
  auto created = sandbox::Sandbox::create(o);
  if (!created.ok()) {
    std::fprintf(stderr, "sandbox_overhead_bench: %s\n", created.status().message().c_str());
    return 3;
  }
  auto& sb = **created;
  auto job_sandbox = sb.for_job();
  auto work = TempDir::create("mooreeval-bench-");
  if (!job_sandbox.ok() || !work.ok()) return 3;
  const auto work_dir = std::filesystem::absolute(work->path());
  std::printf("sandbox: %s\n", sb.settings().dump().substr(0, 400).c_str());
  std::printf("%-34s %10s %10s %10s %10s %8s %10s\n", "command (x", "plain med", "plain p90", "sbx med",
              "sbx p90", "ratio", "added ms");

  struct Case {
    std::string name;
    std::vector<std::string> argv;
    sandbox::JobKind kind;
  };
  std::vector<Case> cases = {
      {"/bin/true", {"/bin/true"}, sandbox::JobKind::kRunCpu},
      // The interpreter itself on both sides (a pyenv shim would only slow the plain side).
      {"python -S -c pass", {sb.python_executable(), "-S", "-c", "pass"}, sandbox::JobKind::kRunCpu},
      {"python -c 'import torch'", {sb.python_executable(), "-c", "import torch"}, sandbox::JobKind::kRunCpu},
      {"c++ -fsyntax-only (empty TU)",
       {"c++", "-fsyntax-only", "-x", "c++", "/dev/null"},
       sandbox::JobKind::kBuild},
  };
  double true_added = 0;
  for (const auto& c : cases) {
    int n = c.name.find("torch") != std::string::npos ? std::max(3, iters / 8) : iters;
    ProcessOptions p;
    p.argv = c.argv;
    p.cwd = work_dir.string();
    p.deadline = std::chrono::seconds(120);
    auto plain = time_runs(n, [&]() -> Result<ProcessOptions> { return p; });
    auto boxed = time_runs(n, [&] { return job_sandbox->wrap(p, {c.kind, work_dir, {}, 0}); });
    if (plain.empty() || boxed.empty()) return 3;
    Stats a = stats(plain), b = stats(boxed);
    if (c.argv[0] == "/bin/true") true_added = b.median - a.median;
    std::printf("%-34s %10.2f %10.2f %10.2f %10.2f %8.2f %10.2f\n",
                (c.name + " x" + std::to_string(n)).c_str(), a.median, a.p90, b.median, b.p90,
                b.median / a.median, b.median - a.median);
  }
  std::printf(
      "sandbox cost per job (/bin/true): %.1f ms added (target < 50 ms: %s); per evaluation (5 jobs): %.1f "
      "ms\n",
      true_added, true_added < 50 ? "met" : "NOT met", 5 * true_added);
  return true_added < 50 ? 0 : 1;
}
