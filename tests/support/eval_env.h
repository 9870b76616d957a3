// Shared set-up of the integration and gpu suites: an Evaluator over the repository's
// runner, bundled tasks, solutions and broken-candidate corpus.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/files.h"
#include "mooreeval/pipeline/evaluator.h"
#include "mooreeval/task/task.h"

namespace musacoder::testing {

inline const std::filesystem::path kSourceDir = MUSACODER_SOURCE_DIR;
inline const std::filesystem::path kBinaryDir = MUSACODER_BINARY_DIR;

// Generous deadlines: CI machines have 2 cores and compiles of torch/extension.h take
// ~30 s each there. Few benchmark iterations: these tests check verdicts, not speed.
inline eval::EvalOptions test_options(build::Backend backend) {
  eval::EvalOptions o;
  o.backend = backend;
  o.max_build = std::chrono::seconds(400);
  o.max_run = std::chrono::seconds(120);
  o.warmup_iters = 2;
  o.benchmark_iters = 5;
  o.runner.runner_dir = kSourceDir / "python";
  o.cache_dir = kBinaryDir / "test-build-cache";
  return o;
}

// For the cases expected to hang: a hang is a timeout after --max-run-seconds, and
// test_options' 120 s would hold a core that long.
inline eval::EvalOptions short_deadline_options(build::Backend backend,
                                                std::chrono::seconds max_run = std::chrono::seconds(20)) {
  auto o = test_options(backend);
  o.max_run = max_run;
  return o;
}

// "" when `ev` (a cuda evaluator) can run, else why not. Checks the device node first, so a
// CPU-only machine skips without starting Python.
inline std::string cuda_unavailable_reason(eval::Evaluator& ev) {
  if (!std::filesystem::exists("/dev/nvidiactl")) return "no NVIDIA device (/dev/nvidiactl missing)";
  Status ready = ev.prepare();
  return ready.ok() ? "" : ready.message();
}

inline std::vector<std::string> bundled_task_ids() {
  std::vector<std::string> ids;
  auto suite = task::load_suite(kSourceDir / "tasks");
  if (suite.ok())
    for (const auto& t : *suite) ids.push_back(t.id);
  return ids;
}

struct BrokenCase {
  std::string file, task, expected;
};

inline std::vector<BrokenCase> broken_cases(const std::string& backend) {
  std::vector<BrokenCase> out;
  auto text = read_file(kSourceDir / "tests/fixtures/candidates/manifest.json");
  if (!text.ok()) return out;
  auto manifest = nlohmann::json::parse(*text, nullptr, false);
  if (!manifest.is_array()) return out;
  for (const auto& m : manifest) {
    auto backends = m.value("backends", std::vector<std::string>{});
    if (std::find(backends.begin(), backends.end(), backend) != backends.end())
      out.push_back({m.value("file", ""), m.value("task", ""), m.value("expected", "")});
  }
  return out;
}

// gtest parameter names: letters, digits and '_' only.
inline std::string param_name(std::string s) {
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

inline eval::Verdict evaluate_file(eval::Evaluator& ev, const std::string& task_id,
                                   const std::filesystem::path& file) {
  auto task = task::resolve_task(task_id, kSourceDir / "tasks");
  if (!task.ok()) {
    eval::Verdict v;
    v.message = "test set-up: " + task.status().message();
    return v;
  }
  auto text = read_file(file, (1 << 20) + 1);
  if (!text.ok()) {
    eval::Verdict v;
    v.message = "test set-up: " + text.status().message();
    return v;
  }
  return ev.evaluate(*task, *text);
}

}  // namespace musacoder::testing
