// KernelBench task files and the bundled suite.
//
// A task is a Python file defining `class Model(nn.Module)`, `get_inputs()` and
// `get_init_inputs()` (KernelBench format). Optional numeric settings come from a JSON
// sidecar next to it (`<stem>.json`) or, failing that, from module constants
// (`MOOREEVAL_DIFFICULTY = 2`, `MOOREEVAL_TRIALS`, `MOOREEVAL_RTOL`, `MOOREEVAL_ATOL`).
// See docs/tasks.md.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::task {

struct TaskSpec {
  std::string id;              // "elementwise/add": path relative to the suite, no ".py"
  std::filesystem::path path;  // absolute path of the task's .py file
  int difficulty = 1;          // 1..3
  int trials = 8;              // numeric check input sets; from difficulty unless overridden
  std::optional<double> rtol;  // task-specific tolerance; unset: the evaluator's default
  std::optional<double> atol;
  std::string dtype = "float32";  // informational: the dtype of the task's inputs
  std::string description;
  // Vendor library families a candidate may call for this task ("cublas", "cudnn", "mkl", "blas",
  // "onednn", ...): sidecar key "allow_libraries". Empty: a candidate computes with its own code only.
  std::vector<std::string> allow_libraries;
};

// Trials for a difficulty: 1 -> 8, 2 -> 16, 3 -> 32.
int trials_for_difficulty(int difficulty);

// Loads one task file. `id` defaults to the file stem. Errors (kNotFound,
// kInvalidArgument) name the file and what is wrong with it: missing, not UTF-8, no
// `class Model`, no `get_inputs`/`get_init_inputs`, a malformed sidecar.
Result<TaskSpec> load_task(const std::filesystem::path& path, const std::string& id = "");

// Every task under `dir` (recursively, `*.py`), sorted by id.
Result<std::vector<TaskSpec>> load_suite(const std::filesystem::path& dir);

// Resolves `--task`: a path to a .py file, or an id inside `suite_dir`.
Result<TaskSpec> resolve_task(const std::string& name_or_path, const std::filesystem::path& suite_dir);

}  // namespace musacoder::task
