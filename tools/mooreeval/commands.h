// The mooreeval subcommands, called by main() after flag parsing.
// Exit codes: 0 every candidate ok; 1 some candidate not ok (its verdict says why);
// 2 bad input or usage; 3 infrastructure failure.
#pragma once

#include <filesystem>
#include <string>

#include "mooreeval/pipeline/evaluator.h"

namespace musacoder::tools {

constexpr int kExitOk = 0, kExitCandidateFailed = 1, kExitBadInput = 2, kExitInfra = 3;

struct EvalCommand {
  std::string task;                 // --task: a file, or an id in tasks_dir
  std::filesystem::path candidate;  // --candidate
  std::filesystem::path tasks_dir;
  bool json = false;
  // --replay: a verdict (eval --json) of this task and candidate; its recorded settings and seeds
  // are applied, so the evaluation draws exactly the same inputs again.
  std::filesystem::path replay;
  // --warm-runners: start the zygote and the resident reference server as eval-batch does. Off by
  // default: they pay off from the second evaluation, and a one-shot waits for their torch imports
  // (12 s instead of 3.5 s on 2 cores).
  bool warm_runners = false;
};

struct BatchCommand {
  std::filesystem::path tasks_dir, samples_dir;
  std::filesystem::path out;  // JSONL; empty: stdout
  int workers = 1;
  bool quiet = false;
};

struct LaunchCommand {
  std::filesystem::path tasks_dir;      // bundled suite
  std::filesystem::path solutions_dir;  // reference solutions per backend: <dir>/<backend>/<task>.py
  std::filesystem::path broken_dir;     // broken candidates with manifest.json
  std::filesystem::path out;            // JSONL of every verdict (optional)
  int workers = 2;
  std::string musa_sdk_version, torch_musa_version, reference_impl = "torch";
};

int run_eval(const EvalCommand& cmd, const eval::EvalOptions& options);
int run_eval_batch(const BatchCommand& cmd, const eval::EvalOptions& options);
int run_launch(const LaunchCommand& cmd, const eval::EvalOptions& options);

}  // namespace musacoder::tools
