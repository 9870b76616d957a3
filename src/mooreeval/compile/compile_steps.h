// Running the compiler processes of one extension build: independent compile steps at
// once, then the link, all under one deadline.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "process/subprocess.h"

namespace musacoder::build {

enum class BuildOutcome { kOk, kCompileError, kTimeout, kInfraError };

struct CompileStep {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
};

// Runs `compiles` concurrently in `cwd`, then `link` if they all succeeded. Appends each
// command line and its output to `log`. A compiler killed by a signal or missing is
// kInfraError (not the candidate's fault); a non-zero exit is kCompileError. `sandbox`
// (src/sandbox; empty: none) turns each step's process into a sandboxed one. When
// `step_seconds` is given, each step's wall seconds are added to it under the compiler's
// name ("nvcc", "c++", ...) or "link".
BuildOutcome run_compile_steps(const std::vector<CompileStep>& compiles, const CompileStep& link,
                               const std::filesystem::path& cwd,
                               std::chrono::steady_clock::time_point deadline, const ProcessWrapper& sandbox,
                               std::string& log, std::map<std::string, double>* step_seconds = nullptr);

}  // namespace musacoder::build
