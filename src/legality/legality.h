// The legality stage: a candidate must compute the result with its own kernel.
//
// Three sources of findings, each rejecting the candidate as `illegal`:
//  - static findings from the runner's AST inspection (no load_inline, torch compute
//    calls in ModelNew.forward, try/except fallback, use of the reference Model);
//  - the extension sources (on cuda: a __global__ kernel that is launched);
//  - the aten ops actually dispatched during one forward call (from Python or from the
//    extension's C++), checked against an allowlist of non-compute ops.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "build/extension_build.h"
#include "build/toolchain.h"

namespace musacoder::legality {

struct LegalityOptions {
  // aten ops (overload packet names) a forward may dispatch: allocation, views, copies.
  std::set<std::string> allowed_torch_ops = default_allowed_ops();
  bool check_runtime_ops = true;  // --no-runtime-op-check disables the dispatch check

  static std::set<std::string> default_allowed_ops();
};

struct Finding {
  std::string rule;     // e.g. "torch_compute_in_forward"
  std::string message;  // for the verdict log
  int line = 0;         // in the candidate source, when known
};

// Findings the runner's inspect mode reported ({"rule","message","line"} objects).
std::vector<Finding> findings_from_inspection(const nlohmann::json& findings);

// Checks the kernel sources for the backend.
std::vector<Finding> check_extension_sources(const std::vector<build::ExtensionSpec>& specs,
                                             build::Backend backend);

// Ops dispatched during a forward call that are not allowed.
std::vector<Finding> check_dispatched_ops(const std::map<std::string, int>& ops,
                                          const LegalityOptions& options);

// "rule: message (line N); ..." for logs.
std::string describe(const std::vector<Finding>& findings);

}  // namespace musacoder::legality
