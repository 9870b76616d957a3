// The mooreeval binary on bad input: clear messages and non-zero exits, never a crash.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "process/subprocess.h"
#include "support/eval_env.h"

namespace musacoder::testing {
namespace {

const std::string kBinary = (kBinaryDir / "tools/mooreeval/mooreeval").string();
const std::string kFixtures = (kSourceDir / "tests/fixtures").string();

ProcessResult mooreeval(std::vector<std::string> args) {
  ProcessOptions o;
  o.argv = {kBinary};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.argv.push_back("--cache-dir=" + (kBinaryDir / "test-build-cache").string());
  o.deadline = std::chrono::seconds(300);
  auto r = run_process(o);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : ProcessResult{};
}

std::string both(const ProcessResult& r) {
  return r.stdout_text + r.stderr_text;
}

TEST(Cli, MissingCandidateFile) {
  auto r = mooreeval({"eval", "--task", "elementwise/add", "--candidate", "/nonexistent.py"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(both(r).find("candidate file not found"), std::string::npos) << both(r);
}

TEST(Cli, TaskWithoutModel) {
  auto r = mooreeval({"eval", "--task", kFixtures + "/bad_tasks/no_model.py", "--candidate",
                      kFixtures + "/candidates/correct_cpu.py"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(both(r).find("class Model"), std::string::npos) << both(r);
}

TEST(Cli, UnknownTask) {
  auto r =
      mooreeval({"eval", "--task", "no/such/task", "--candidate", kFixtures + "/candidates/correct_cpu.py"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(both(r).find("task not found"), std::string::npos) << both(r);
}

TEST(Cli, EmptyHugeAndNonUtf8ResponsesAreFormatErrors) {
  auto dir = TempDir::create("mc-cli-test-");
  ASSERT_TRUE(dir.ok());
  const auto huge = dir->path() / "huge.md";
  ASSERT_TRUE(
      write_file_atomic(huge, "```python\nclass ModelNew:\n" + std::string((1 << 20) + 10, '#') + "\n```")
          .ok());
  const auto binary = dir->path() / "binary.txt";
  ASSERT_TRUE(write_file_atomic(binary, std::string("class ModelNew:\n\xFF\xFE\x00\x01", 20)).ok());
  struct Case {
    std::string file, needle;
  } cases[] = {{kFixtures + "/candidates/empty_response.txt", "empty"},
               {huge.string(), "over the limit"},
               {binary.string(), "UTF-8"}};
  for (const auto& c : cases) {
    auto r = mooreeval({"eval", "--task", "elementwise/add", "--candidate", c.file, "--json"});
    EXPECT_EQ(r.exit_code, 1) << c.file << both(r);
    auto j = nlohmann::json::parse(r.stdout_text, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.stdout_text;
    EXPECT_EQ(j["verdict"], "format_error");
    EXPECT_NE(j["message"].get<std::string>().find(c.needle), std::string::npos) << j["message"];
    EXPECT_EQ(j["reward"]["total"], 0.0);
  }
}

TEST(Cli, JsonVerdictHasTheSchemaFields) {
  auto r = mooreeval({"eval", "--task", "elementwise/add", "--candidate",
                      kFixtures + "/candidates/syntax_error.py", "--json"});
  EXPECT_EQ(r.exit_code, 1);
  auto j = nlohmann::json::parse(r.stdout_text, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.stdout_text << r.stderr_text;
  auto schema_text = read_file(kSourceDir / "docs/verdict.schema.json");
  ASSERT_TRUE(schema_text.ok());
  auto schema = nlohmann::json::parse(*schema_text);
  ASSERT_GE(schema["required"].size(), 20u);
  for (const auto& key : schema["required"]) EXPECT_TRUE(j.contains(key.get<std::string>())) << key;
  for (const auto& [key, value] : j.items()) EXPECT_TRUE(schema["properties"].contains(key)) << key;
  auto verdicts = schema["properties"]["verdict"]["enum"];
  EXPECT_NE(std::find(verdicts.begin(), verdicts.end(), j["verdict"]), verdicts.end());
  EXPECT_EQ(j["verdict"], "format_error");
}

TEST(Cli, MusaBackendWithoutToolchain) {
  auto r =
      mooreeval({"launch", "--workers",           "64",    "--backend",         "musa",  "--musa-sdk-version",
                 "5.1.0",  "--torch-musa",        "2.9.0", "--reference-impl",  "torch", "--tolerance-rtol",
                 "1e-3",   "--tolerance-atol",    "1e-3",  "--benchmark-iters", "50",    "--warmup-iters",
                 "10",     "--max-build-seconds", "60",    "--max-run-seconds", "30"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(both(r).find("MUSA toolchain not found"), std::string::npos) << both(r);
}

TEST(Cli, BadFlagValues) {
  EXPECT_EQ(mooreeval({"launch", "--reference-impl", "numpy"}).exit_code, 2);
  EXPECT_EQ(mooreeval({"launch", "--backend", "tpu"}).exit_code, 2);
  EXPECT_EQ(mooreeval({"eval", "--task", "elementwise/add"}).exit_code, 2);  // --candidate missing
  EXPECT_EQ(mooreeval({"launch", "--max-build-seconds", "-5"}).exit_code, 2);
}

}  // namespace
}  // namespace musacoder::testing
