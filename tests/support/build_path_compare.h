// The same candidate evaluated by the lean and the full build path must get the same
// verdict: shared by the integration (cpu) and gpu suites.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/eval_env.h"

namespace musacoder::testing {

struct PathCase {
  std::string task, file;  // file relative to the source tree
};

// Solutions across the categories, and every broken candidate of the corpus whose verdict
// is decided at or after the build (so both paths really build it).
inline std::vector<PathCase> path_cases(const std::string& backend,
                                        const std::vector<std::string>& solutions) {
  std::vector<PathCase> out;
  for (const auto& id : solutions) out.push_back({id, "solutions/" + backend + "/" + id + ".py"});
  for (const auto& b : broken_cases(backend)) {
    if (b.expected == "format_error" || b.expected == "illegal" || b.expected == "timeout") continue;
    out.push_back({b.task, "tests/fixtures/candidates/" + b.file});
  }
  return out;
}

inline std::string path_case_name(const ::testing::TestParamInfo<PathCase>& info) {
  return param_name(info.param.file.substr(info.param.file.find_last_of('/') + 1) + "_" + info.param.task);
}

// Evaluates `c` both ways; the verdict class, compile and correctness (and so the reward's
// parts other than speed) must agree, and both must report the path they were asked for.
inline void expect_same_verdict_both_paths(build::Backend backend, const PathCase& c) {
  auto lean_options = test_options(backend);
  lean_options.build_path = build::BuildPath::kAuto;  // lean where it compiles (compile errors: full)
  auto full_options = test_options(backend);
  full_options.build_path = build::BuildPath::kFull;
  eval::Evaluator lean(lean_options), full(full_options);
  const eval::Verdict a = evaluate_file(lean, c.task, kSourceDir / c.file);
  const eval::Verdict b = evaluate_file(full, c.task, kSourceDir / c.file);
  // Two infrastructure failures would "agree" without saying anything about the paths.
  ASSERT_NE(a.verdict, eval::VerdictClass::kInfraError) << a.message << "\n" << a.log;
  ASSERT_NE(b.verdict, eval::VerdictClass::kInfraError) << b.message << "\n" << b.log;
  EXPECT_EQ(eval::verdict_name(a.verdict), eval::verdict_name(b.verdict))
      << "lean: " << a.message << "\nfull: " << b.message << "\nlean log: " << a.log;
  EXPECT_EQ(a.compiled, b.compiled);
  EXPECT_EQ(a.passed, b.passed);
  EXPECT_EQ(a.trials, b.trials);
  EXPECT_DOUBLE_EQ(a.reward.compile_part, b.reward.compile_part);
  EXPECT_DOUBLE_EQ(a.reward.correctness_part, b.reward.correctness_part);
  EXPECT_EQ(a.reward.performance_part > 0, b.reward.performance_part > 0);
  if (b.compiled) {
    EXPECT_EQ(b.build_path, "full");
    EXPECT_EQ(a.build_path, "lean") << a.log;
  }
  // Timing noise aside, the lean shim adds no measurable host overhead to a kernel call.
  if (a.speedup && b.speedup) {
    std::cout << "GPU_RESULT lean_vs_full " << c.task << " " << c.file << " speedup lean " << *a.speedup
              << " full " << *b.speedup << "\n";
  }
}

}  // namespace musacoder::testing
