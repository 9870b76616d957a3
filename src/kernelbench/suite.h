// Suites: the tasks a model is evaluated on, read from disk in one of two layouts.
//
//   task folder   DIR/<category>/<name>.py (+ optional <name>.json sidecar), any depth; task id is the
//                 path without ".py" ("elementwise/add"); level = the sidecar's "difficulty" (default 1).
//                 The bundled tasks/ and synthesized held-out sets use it.
//   KernelBench   DIR/KernelBench/level<L>/<id>_<Name>.py (DIR may also be the KernelBench/ folder
//                 itself), as in ScalingIntelligence/KernelBench; task id "level1/19_ReLU", level L,
//                 problem id the number before the first '_'.
//
// A task that cannot be used (unreadable, not UTF-8, no `class Model`, no `get_inputs` or
// `get_init_inputs`, a KernelBench file name without a numeric id, a duplicate id: the later file by name) is kept in the suite
// with `load_error` set: reports list it, metrics leave it out, nothing crashes on it.
//
// Every suite has a stable id (what it is: "kernelbench:L1,2/p1-20") and a content hash: SHA-256 over
// the sorted (task id, task bytes, sidecar bytes) of every task, loadable or not, so two runs compare
// only when they saw the same bytes.
//
// Thread-safety: pure functions of the file system.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace musacoder::kernelbench {

struct SuiteTask {
  std::string id;                // "level1/19_ReLU" or "elementwise/add"
  int level = 1;                 // KernelBench level, or the sidecar's difficulty
  int problem_id = 0;            // KernelBench number; 0 in task folders
  std::filesystem::path path;    // the .py
  std::string source;            // the task module's text (empty when it could not be read)
  std::string description;       // the sidecar's "description", if any
  std::string load_error;        // empty: usable
  bool usable() const { return load_error.empty(); }
};

struct Suite {
  std::string id;            // stable description of what was selected
  std::string content_hash;  // hex SHA-256 (see above)
  std::filesystem::path root;
  std::vector<SuiteTask> tasks;  // sorted by (level, problem_id, id)
  std::size_t usable_count() const;
};

struct KernelBenchSelection {
  std::set<int> levels = {1, 2, 3};
  std::set<int> problems;  // empty: every problem of the selected levels
};

// "1-20,42" -> {1..20, 42}. Errors (kInvalidArgument): empty items, non-numbers, a > b, values < 1.
Result<std::set<int>> parse_id_list(std::string_view text);

// Errors: kNotFound when `dir` is not a directory (or a KernelBench checkout has none of the levels).
Result<Suite> load_task_folder(const std::filesystem::path& dir);
Result<Suite> load_kernelbench(const std::filesystem::path& dir, const KernelBenchSelection& selection);

// Why a task module cannot be used ("" when it looks like a KernelBench task): textual checks only;
// the verifier decides the rest.
std::string task_source_problem(std::string_view source);

}  // namespace musacoder::kernelbench
