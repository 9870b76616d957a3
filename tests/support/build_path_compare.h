// The same candidate evaluated by the lean (fast) and the full build path must get the same
// verdict and reward: shared by the integration (cpu), equivalence (cpu, every candidate) and
// gpu (cuda, every candidate) suites.
//
// Both paths evaluate the whole set as one batch each (one Evaluator per path, so the probe,
// zygotes, warm runners and the lean shim are set up once, not once per case): lean first,
// then full. Every case is compared on its verdict class, compile and correctness facts, the
// reward's parts other than speed, whether it earned a performance part, and (when illegal)
// the legality rules found.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/adversarial.h"
#include "support/eval_env.h"

namespace musacoder::testing {

struct PathCase {
  std::string task, file;      // file relative to the source tree
  bool needs_sandbox = false;  // adversarial cases only the sandbox can stop
  bool solution = false;       // a bundled reference solution: the fast path must take it
};

inline std::vector<PathCase> solution_cases(const std::string& backend, const std::vector<std::string>& ids) {
  std::vector<PathCase> out;
  for (const auto& id : ids) out.push_back({id, "solutions/" + backend + "/" + id + ".py", false, true});
  return out;
}

// Every bundled solution of the backend (the benchmark's set: perf/compile_throughput adds
// only renamed copies of them), every broken candidate and every adversarial case.
inline std::vector<PathCase> every_candidate(const std::string& backend) {
  std::vector<PathCase> out = solution_cases(backend, bundled_task_ids());
  std::erase_if(out, [](const PathCase& c) { return !std::filesystem::exists(kSourceDir / c.file); });
  for (const auto& b : broken_cases(backend)) out.push_back({b.task, "tests/fixtures/candidates/" + b.file});
  for (const auto& a : adversarial_cases(backend))
    out.push_back({a.task, "tests/adversarial/" + a.file, a.needs_sandbox});
  return out;
}

// Concurrent evaluations for a batch: one per core, at most 16.
inline int path_workers() {
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 2u, 16u));
}

inline std::set<std::string> rules_found(const mooreeval::Verdict& v) {
  std::set<std::string> rules;
  for (const auto& f : v.legality) rules.insert(f.rule);
  return rules;
}

// Evaluates `cases` by both paths and expects them to agree on every case. Prints one
// "PATHS" line per case (verdicts, build paths, seconds) so a run documents itself.
inline void expect_paths_agree(const std::string& backend, std::vector<PathCase> cases,
                               int workers = path_workers()) {
  auto options = test_options(backend);
  options.deadlines.max_run = std::chrono::seconds(60);  // the spinning cases time out after this
  options.concurrency.workers = workers;                 // evaluate_batch's threads
  const bool any_needs_sandbox =
      std::any_of(cases.begin(), cases.end(), [](const PathCase& c) { return c.needs_sandbox; });
  if (any_needs_sandbox && sandbox_present()) {
    options.sandbox.mode = sandbox::SandboxMode::kOn;  // never run those cases unconfined
  } else if (any_needs_sandbox) {
    std::erase_if(cases, [](const PathCase& c) {
      if (c.needs_sandbox)
        std::cout << "PATHS skipped " << c.file << ": only the per-job sandbox can stop it, and it is not in this build\n";
      return c.needs_sandbox;
    });
  }
  ASSERT_FALSE(cases.empty());

  std::vector<mooreeval::Submission> submissions;
  for (const auto& c : cases) {
    auto task = bundled_task(c.task);
    ASSERT_TRUE(task.ok()) << c.file << ": " << task.status().message();
    submissions.push_back({*task, "", kSourceDir / c.file});
  }
  auto lean_options = options;
  lean_options.compile.build_path = "auto";  // lean where it compiles, else full
  auto full_options = options;
  full_options.compile.build_path = "full";
  std::vector<mooreeval::Verdict> lean, full;
  {
    auto ev = make_evaluator(lean_options);
    ASSERT_TRUE(ev) << ev.why;
    lean = ev->evaluate_batch(submissions);
  }
  {
    auto ev = make_evaluator(full_options);
    ASSERT_TRUE(ev) << ev.why;
    full = ev->evaluate_batch(submissions);
  }
  ASSERT_EQ(lean.size(), cases.size());
  ASSERT_EQ(full.size(), cases.size());

  int fell_back = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const mooreeval::Verdict& a = lean[i];
    const mooreeval::Verdict& b = full[i];
    SCOPED_TRACE(c.file + " on " + c.task);
    std::cout << "PATHS " << c.file << " " << c.task << " lean " << mooreeval::verdict_name(a.verdict) << "/"
              << (a.build_path.empty() ? "-" : a.build_path) << " " << a.seconds.total << " s, full "
              << mooreeval::verdict_name(b.verdict) << "/" << (b.build_path.empty() ? "-" : b.build_path)
              << " " << b.seconds.total << " s";
    // Timing noise aside, the lean shim adds no measurable host overhead to a kernel call.
    if (a.speedup && b.speedup) std::cout << ", speedup lean " << *a.speedup << " full " << *b.speedup;
    std::cout << "\n";
    // Two infrastructure failures would "agree" without saying anything about the paths.
    if (a.verdict == mooreeval::VerdictClass::kInfraError ||
        b.verdict == mooreeval::VerdictClass::kInfraError) {
      ADD_FAILURE() << "infra_error: lean: " << a.message << "\nfull: " << b.message << "\nlean log: " << a.log
                    << "\nfull log: " << b.log;
      continue;
    }
    EXPECT_EQ(mooreeval::verdict_name(a.verdict), mooreeval::verdict_name(b.verdict))
        << "lean: " << a.message << "\nfull: " << b.message << "\nlean log: " << a.log
        << "\nfull log: " << b.log;
    EXPECT_EQ(a.stage, b.stage) << "lean: " << a.message << "\nfull: " << b.message;
    EXPECT_EQ(a.compiled, b.compiled);
    EXPECT_EQ(a.passed, b.passed);
    EXPECT_EQ(a.trials, b.trials);
    EXPECT_DOUBLE_EQ(a.reward.compile_part, b.reward.compile_part);
    EXPECT_DOUBLE_EQ(a.reward.correctness_part, b.reward.correctness_part);
    EXPECT_EQ(a.reward.performance_part > 0, b.reward.performance_part > 0);
    if (a.verdict == mooreeval::VerdictClass::kIllegal) {
      EXPECT_EQ(rules_found(a), rules_found(b)) << "lean: " << a.message << "\nfull: " << b.message;
    }
    if (b.compiled) {
      EXPECT_EQ(b.build_path, "full");
      EXPECT_TRUE(a.build_path == "lean" || a.build_path == "full" || a.build_path == "mixed") << a.build_path;
      if (a.build_path != "lean") ++fell_back;
      // The set the fast path exists for: every bundled solution must take it.
      if (c.solution) {
        EXPECT_EQ(a.build_path, "lean") << a.log;
      }
    }
  }
  std::cout << "PATHS " << cases.size() << " candidates compared, " << fell_back
            << " built (wholly or partly) by the full path on both sides: the lean path could not compile them\n";
}

}  // namespace musacoder::testing
