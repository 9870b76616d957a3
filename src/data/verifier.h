// The synthesizer's one door to the verifier (MooreEval). Everything the data pipeline needs
// from eval/ goes through here, so moving to the verifier's future front door
// (src/mooreeval/mooreeval.h) changes this file pair only. Verdicts come back as JSON in the
// verdict schema (docs/verdict.schema.json), which is also what the service returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::data {

struct VerifierSettings {
  std::string backend = "cpu";          // cpu | cuda | musa
  int workers = 2;                      // concurrent evaluations
  int run_slots = 1;                    // candidates on the device at once
  int warmup_iters = 10;                // benchmark warm-up calls
  int benchmark_iters = 50;             // timed calls
  std::chrono::seconds max_build{120};  // per candidate, all extensions
  std::chrono::seconds max_run{60};     // per runner process
  std::optional<uint64_t> seed;         // trial seeds' base (fresh when unset)
  int cpu_threads = 0;                  // torch intra-op threads in runners (0: default)
  std::filesystem::path runner_dir;     // holds mooreeval_runner/ (empty: located)
  std::filesystem::path cache_dir;      // build cache (empty: none)
  std::filesystem::path work_root;      // temp dirs (empty: system temp)
  std::string python = "python3";       // interpreter with torch
  std::string sandbox = "auto";         // on | off | auto
  // auto | lean | full (docs/build.md). lean: a source the lean headers cannot compile is a compile_error
  // without the 30-60 s full build (faster, but stricter than load_inline: for runs that trade that for
  // speed).
  std::string build_path = "auto";
};

// Candidates on the device at once where a caller names no number: 4 on a GPU backend (a benchmark still has
// the device alone, under MooreEval's timing lock), 1 on cpu, whose candidates share the machine's cores.
inline int default_run_slots(const std::string& backend) {
  return backend == "cpu" ? 1 : 4;
}

// One submission to verify against one task file.
struct VerifyJob {
  std::string task_id;               // "fusion/p00012"
  std::filesystem::path task_path;   // the task's .py (its sidecar next to it)
  std::filesystem::path submission;  // file holding the submission (Python module or response)
};

class Verifier {
 public:
  // Builds the evaluator and checks that the runner and toolchain work for the backend
  // (kUnavailable / kInvalidArgument with the verifier's own message otherwise).
  static Result<std::unique_ptr<Verifier>> create(const VerifierSettings& settings);
  virtual ~Verifier() = default;

  // Verifies every job, `settings.workers` at a time; `on_done(index, verdict)` is called
  // (serialised) as each finishes. A task file that does not load gets an infra_error verdict.
  virtual std::vector<nlohmann::json> verify(
      const std::vector<VerifyJob>& jobs,
      const std::function<void(std::size_t, const nlohmann::json&)>& on_done) = 0;

  // The verifier's version as recorded with every pair: the verdict schema and the toolchain.
  virtual std::string version() const = 0;
};

}  // namespace musacoder::data
