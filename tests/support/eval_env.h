// Shared set-up of the integration and gpu suites: an Evaluator (through the front door,
// mooreeval/mooreeval.h) over the repository's runner, bundled tasks, solutions and
// broken-candidate corpus.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/files.h"
#include "mooreeval/mooreeval.h"

namespace musacoder::testing {

inline const std::filesystem::path kSourceDir = MUSACODER_SOURCE_DIR;
inline const std::filesystem::path kBinaryDir = MUSACODER_BINARY_DIR;

// Generous deadlines: CI machines have 2 cores and compiles of torch/extension.h take
// ~30 s each there. Few benchmark iterations: these tests check verdicts, not speed.
// `backend`: cpu | cuda | musa.
inline mooreeval::Options test_options(const std::string& backend) {
  mooreeval::Options o;
  o.compile.backend = backend;
  o.deadlines.max_build = std::chrono::seconds(400);
  o.deadlines.max_run = std::chrono::seconds(120);
  o.timing.warmup_iters = 2;
  o.timing.benchmark_iters = 5;
  o.runner.runner_dir = kSourceDir / "python";
  o.compile.cache_dir = kBinaryDir / "test-build-cache";
  return o;
}

// For the cases expected to hang: a hang is a timeout after --max-run-seconds, and
// test_options' 120 s would hold a core that long.
inline mooreeval::Options short_deadline_options(const std::string& backend,
                                                 std::chrono::seconds max_run = std::chrono::seconds(20)) {
  auto o = test_options(backend);
  o.deadlines.max_run = max_run;
  return o;
}

// An evaluator for a test, or why Evaluator::create refused one (the toolchain or the device is
// missing, or the options are bad). Used like a pointer: `ASSERT_TRUE(ev) << ev.why;` or
// `if (!ev) GTEST_SKIP() << ev.why;`, then `ev->evaluate(...)`.
struct TestEvaluator {
  std::unique_ptr<mooreeval::Evaluator> evaluator;  // null when refused
  std::string why;                                  // create()'s message when refused, else ""
  explicit operator bool() const { return evaluator != nullptr; }
  mooreeval::Evaluator& operator*() const { return *evaluator; }
  mooreeval::Evaluator* operator->() const { return evaluator.get(); }
};

// Evaluator::create, which probes the toolchain and starts the warm pools (seconds): suites share
// one per process where they can. A cuda evaluator is refused without starting Python where the
// machine has no NVIDIA device node.
inline TestEvaluator make_evaluator(const mooreeval::Options& options) {
  if (options.compile.backend == "cuda" && !std::filesystem::exists("/dev/nvidiactl"))
    return {nullptr, "no NVIDIA device (/dev/nvidiactl missing)"};
  auto created = mooreeval::Evaluator::create(options);
  if (!created.ok()) return {nullptr, created.status().message()};
  return {std::move(*created), ""};
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

// A bundled task by id ("elementwise/add").
inline Result<mooreeval::Task> bundled_task(const std::string& id) {
  return mooreeval::load_task(kSourceDir / "tasks" / (id + ".py"), id);
}

inline mooreeval::Verdict evaluate_file(mooreeval::Evaluator& ev, const std::string& task_id,
                                        const std::filesystem::path& file) {
  auto task = bundled_task(task_id);
  if (!task.ok()) {
    mooreeval::Verdict v;
    v.message = "test set-up: " + task.status().message();
    return v;
  }
  auto text = read_file(file, (1 << 20) + 1);
  if (!text.ok()) {
    mooreeval::Verdict v;
    v.message = "test set-up: " + text.status().message();
    return v;
  }
  return ev.evaluate(*task, *text);
}

}  // namespace musacoder::testing
