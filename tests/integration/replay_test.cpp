// `mooreeval eval --replay VERDICT.json`: a wrong_answer verdict's numbers come back exactly (cpu),
// and a replay of a different candidate is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "process/subprocess.h"

namespace musacoder {
namespace {

const std::filesystem::path kSource = MUSACODER_SOURCE_DIR;
const std::filesystem::path kBinaryDir = MUSACODER_BINARY_DIR;
const std::string kWrong = (kSource / "tests/fixtures/candidates/wrong_math_cpu.py").string();

ProcessResult mooreeval(std::vector<std::string> args) {
  ProcessOptions o;
  o.argv = {(kBinaryDir / "tools/mooreeval/mooreeval").string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.argv.push_back("--cache-dir=" + (kBinaryDir / "test-build-cache").string());
  o.deadline = std::chrono::seconds(300);
  auto r = run_process(o);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : ProcessResult{};
}

nlohmann::json eval_json(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"eval", "--task", "elementwise/add", "--candidate", kWrong, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = mooreeval(args);
  EXPECT_EQ(r.exit_code, 1) << r.stderr_text;
  auto j = nlohmann::json::parse(r.stdout_text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.stdout_text << r.stderr_text;
  return j;
}

TEST(Replay, WrongAnswerNumbersComeBackExactly) {
  const nlohmann::json first = eval_json();
  ASSERT_EQ(first.value("verdict", ""), "wrong_answer");
  auto dir = TempDir::create("mc-replay-test-");
  ASSERT_TRUE(dir.ok());
  const auto file = dir->path() / "verdict.json";
  ASSERT_TRUE(write_file_atomic(file, first.dump()).ok());

  const nlohmann::json again = eval_json({"--replay", file.string()});
  EXPECT_EQ(again["verdict"], "wrong_answer");
  EXPECT_EQ(again["config"]["seeds"], first["config"]["seeds"]);
  for (const char* field : {"trials", "passed", "max_abs_error", "max_rel_error", "message"})
    EXPECT_EQ(again[field], first[field]) << field;
  EXPECT_EQ(again["config"]["cpu_threads"], first["config"]["cpu_threads"]);
  EXPECT_EQ(again["config"]["poison_bytes"], first["config"]["poison_bytes"]);

  // Without --replay the seeds are fresh.
  const nlohmann::json fresh = eval_json();
  EXPECT_NE(fresh["config"]["seeds"], first["config"]["seeds"]);
}

TEST(Replay, AnotherCandidateIsRefused) {
  nlohmann::json verdict = {{"task", "elementwise/add"},
                            {"candidate_sha256", "0000"},
                            {"config", {{"seeds", {{"init", 1}, {"trials", {2}}, {"checks", {3, 4, 5}}, {"recheck", 6}}}}}};
  auto dir = TempDir::create("mc-replay-test-");
  ASSERT_TRUE(dir.ok());
  const auto file = dir->path() / "verdict.json";
  ASSERT_TRUE(write_file_atomic(file, verdict.dump()).ok());
  auto r = mooreeval({"eval", "--task", "elementwise/add", "--candidate", kWrong, "--replay", file.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("not the one the verdict evaluated"), std::string::npos) << r.stderr_text;
}

}  // namespace
}  // namespace musacoder
