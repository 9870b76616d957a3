// The front door's grouped options: defaults equal the pipeline's, every group reaches its field,
// bad names are refused; and the layout rule that only mooreeval.h is included from outside.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "mooreeval/front/options_map.h"

namespace musacoder::mooreeval {
namespace {

TEST(FrontOptions, DefaultsEqualThePipelineDefaults) {
  auto mapped = to_eval_options(Options{});
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  eval::EvalOptions plain;
  EXPECT_EQ(mapped->to_json(), plain.to_json());
  // Fields the pipeline's to_json leaves out.
  EXPECT_EQ(mapped->poison_bytes, plain.poison_bytes);
  EXPECT_EQ(mapped->cpu_threads, plain.cpu_threads);
  EXPECT_EQ(mapped->seed, plain.seed);
  EXPECT_EQ(mapped->infra_retries, plain.infra_retries);
  EXPECT_EQ(mapped->max_submission_bytes, plain.max_submission_bytes);
  EXPECT_EQ(mapped->max_log_bytes, plain.max_log_bytes);
  EXPECT_EQ(mapped->keep_work_dirs, plain.keep_work_dirs);
  EXPECT_EQ(mapped->lean_dir, plain.lean_dir);
  EXPECT_EQ(mapped->static_only, plain.static_only);
}

TEST(FrontOptions, EveryGroupReachesItsField) {
  Options o;
  o.check.rtol = 0.5;
  o.check.seed = 7;
  o.check.poison_bytes = 3;
  o.check.static_only = true;
  o.timing.benchmark_iters = 9;
  o.timing.flush_l2 = false;
  o.timing.host_head_start = false;
  o.timing.rounds = 5;
  o.deadlines.max_run = std::chrono::milliseconds(1234);
  o.deadlines.infra_retries = 4;
  o.concurrency.workers = 6;
  o.concurrency.run_slots = 2;
  o.compile.backend = "cuda";
  o.compile.build_path = "lean";
  o.runner.cpu_threads = 3;
  o.runner.resident_reference = false;
  o.legality.forbid_fallback_code = true;
  o.reward.speedup_cap = 2.5;
  auto m = to_eval_options(o);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->rtol, 0.5);
  EXPECT_EQ(m->seed, std::optional<std::uint64_t>(7));
  EXPECT_EQ(m->poison_bytes, 3u);
  EXPECT_TRUE(m->static_only);
  EXPECT_EQ(m->benchmark_iters, 9);
  EXPECT_FALSE(m->flush_l2);
  EXPECT_FALSE(m->host_head_start);
  EXPECT_EQ(m->timing_rounds, 5);
  EXPECT_EQ(m->max_run.count(), 1234);
  EXPECT_EQ(m->infra_retries, 4);
  EXPECT_EQ(m->workers, 6);
  EXPECT_EQ(m->run_slots, 2);
  EXPECT_EQ(m->backend, build::Backend::kCuda);
  EXPECT_EQ(m->build_path, build::BuildPath::kLean);
  EXPECT_EQ(m->cpu_threads, 3);
  EXPECT_FALSE(m->resident_reference);
  EXPECT_TRUE(m->legality.forbid_fallback_code);
  EXPECT_EQ(m->reward.speedup_cap, 2.5);
  // The groups' JSON names the same values.
  auto j = o.to_json();
  EXPECT_EQ(j["check"]["seed"], 7);
  EXPECT_EQ(j["check"]["static_only"], true);
  EXPECT_EQ(j["compile"]["backend"], "cuda");
  EXPECT_EQ(j["reward"]["speedup_cap"], 2.5);
  EXPECT_EQ(j["timing"]["rounds"], 5);
}

TEST(FrontOptions, UnknownNamesAreRefused) {
  Options o;
  o.compile.backend = "tpu";
  EXPECT_FALSE(to_eval_options(o).ok());
  o.compile.backend = "cpu";
  o.compile.build_path = "fastest";
  EXPECT_FALSE(to_eval_options(o).ok());
}

// Outside src/mooreeval and tools/mooreeval, the verifier is reached through mooreeval/mooreeval.h
// only (DESIGN.md §1). The folders of the learner side are checked; each must exist or be absent.
TEST(Layout, OnlyTheFrontDoorIsIncludedFromOutside) {
  namespace fs = std::filesystem;
  const fs::path root = MUSACODER_SOURCE_DIR;
  const std::regex include(R"re(#\s*include\s*"(mooreeval/[^"]+)")re");
  int files = 0;
  for (const char* dir : {"src/data", "src/train", "src/engine", "src/rl", "src/prompts", "src/model",
                          "src/tokenizer", "src/kernelbench", "src/quickstart", "src/musa",
                          "tools/musacoder"}) {
    if (!fs::exists(root / dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      if (!e.is_regular_file()) continue;
      const auto ext = e.path().extension();
      if (ext != ".h" && ext != ".cpp" && ext != ".cu") continue;
      ++files;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        std::smatch m;
        if (std::regex_search(line, m, include)) {
          EXPECT_EQ(m[1].str(), "mooreeval/mooreeval.h") << e.path().string() << ":" << n;
        }
      }
    }
  }
  EXPECT_GT(files, 0);
}

// No test under tests/ opens the pipeline or the runners: black-box suites use mooreeval.h, and the
// white-box tests of those layers live beside them in src/mooreeval (tests/unit/CMakeLists.txt).
TEST(Layout, NoTestIncludesThePipelineOrTheRunners) {
  namespace fs = std::filesystem;
  const fs::path root = MUSACODER_SOURCE_DIR;
  const std::regex include(R"re(#\s*include\s*"mooreeval/(pipeline|runner)/[^"]+")re");
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "tests")) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".h" && ext != ".cpp")) continue;
    ++files;
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      EXPECT_FALSE(std::regex_search(line, include)) << e.path().string() << ":" << n << ": " << line;
  }
  EXPECT_GT(files, 20);
}

}  // namespace
}  // namespace musacoder::mooreeval
