// The mooreeval binary on odd input (issue 26): file names that are not UTF-8 (the batch
// finishes with every verdict and the summary, escaped in JSON), output paths that cannot
// be written (refused before any work), numeric flags out of range (a message with the
// range), temp dirs of dead runs (swept at the next start, never a live run's), and the
// launcher's progress and split summary.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/files.h"
#include "process/subprocess.h"
#include "support/eval_env.h"
#include "support/child_process.h"

namespace musacoder::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

// The build cache the CLI tests share (the lean shim is built once, not per server).
const std::string kTestCache = "--cache-dir=" + (std::filesystem::path(MUSACODER_BINARY_DIR) / "test-build-cache").string();

const std::string kBin = (kBinaryDir / "tools/mooreeval/mooreeval").string();

ProcessResult run(std::vector<std::string> args) {
  ProcessOptions o;
  o.argv = {kBin};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.argv.push_back("--cache-dir=" + (kBinaryDir / "test-build-cache").string());
  o.deadline = std::chrono::seconds(300);
  auto r = run_process(o);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : ProcessResult{};
}

std::vector<json> jsonl(const fs::path& p) {
  std::vector<json> out;
  std::istringstream in(read_file(p).value());
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line, nullptr, false));
  return out;
}

class OddInput : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_.emplace(TempDir::create("mc-odd-input-").value());
    dir_ = tmp_->path();
  }
  std::optional<TempDir> tmp_;  // removed (with everything below) after each test
  fs::path dir_;
};

TEST_F(OddInput, NonUtf8SampleAndOutNamesFinishTheBatchWithEverySummary) {
  const fs::path samples = dir_ / "samples" / "elementwise" / "add";
  fs::create_directories(samples);
  ASSERT_TRUE(write_file_atomic(samples / "a_plain.txt", "prose, no code").ok());
  ASSERT_TRUE(write_file_atomic(samples / std::string("b_\xff\xfe.py"), "more prose").ok());
  ASSERT_TRUE(write_file_atomic(samples / "c_plain.txt", "").ok());
  const fs::path out = dir_ / std::string("out_\xe9.jsonl");  // Latin-1 é: not UTF-8
  auto r = run({"eval-batch", "--tasks", (kSourceDir / "tasks").string(), "--samples", (dir_ / "samples").string(),
                "--out", out.string(), "--workers", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.stderr_text;  // candidates failed; not a crash (134)
  auto lines = jsonl(out);
  ASSERT_EQ(lines.size(), 4u) << r.stderr_text;
  int escaped = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(lines[i].is_object());
    EXPECT_EQ(lines[i]["verdict"], "format_error");
    escaped += lines[i]["sample"].get<std::string>().find("b_\\xFF\\xFE.py") != std::string::npos;
  }
  EXPECT_EQ(escaped, 1);
  EXPECT_EQ(lines[3]["summary"]["samples"], 3);
  EXPECT_NE(r.stderr_text.find("[3/3"), std::string::npos) << r.stderr_text;
}

TEST_F(OddInput, NonUtf8TaskPathGivesAVerdictNotAnAbort) {
  const fs::path task = dir_ / std::string("add_\xff.py");
  fs::copy_file(kSourceDir / "tasks/elementwise/add.py", task);
  ASSERT_TRUE(write_file_atomic(dir_ / "c.txt", "prose").ok());
  auto r = run({"eval", "--task", task.string(), "--candidate", (dir_ / "c.txt").string(), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.stderr_text;
  EXPECT_TRUE(json::parse(r.stdout_text, nullptr, false).is_object()) << r.stdout_text;
}

TEST_F(OddInput, UnwritableOutFailsBeforeAnyWork) {
  for (const std::string& cmd : {std::string("launch"), std::string("eval-batch")}) {
    std::vector<std::string> args = {cmd, "--out", "/nonexistent-dir/x.jsonl"};
    if (cmd == "eval-batch")
      args.insert(args.end(), {"--tasks", (kSourceDir / "tasks").string(), "--samples", (kSourceDir / "solutions/cpu").string()});
    const auto t0 = std::chrono::steady_clock::now();
    auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << cmd << r.stderr_text;
    EXPECT_NE(r.stderr_text.find("--out /nonexistent-dir/x.jsonl: cannot write"), std::string::npos) << r.stderr_text;
    EXPECT_EQ(r.stderr_text.find("candidates on"), std::string::npos) << r.stderr_text;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 60s);  // no evaluator was started
  }
  auto dir_out = run({"launch", "--out", dir_.string()});
  EXPECT_EQ(dir_out.exit_code, 2);
  EXPECT_NE(dir_out.stderr_text.find("is a directory"), std::string::npos) << dir_out.stderr_text;
}

TEST_F(OddInput, NumericFlagsOutOfRangeSayTheRange) {
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  } cases[] = {{{"--cpu-threads", "5000"}, "--cpu-threads"}, {{"--reward-speedup-cap", "0"}, "--reward-speedup-cap"},
               {{"--seed", "-1"}, "[0, 18446744073709551615]"},  {{"--gpu", "-3"}, "--gpu"},
               {{"--tolerance-rtol", "2"}, "--tolerance-rtol"},  {{"--cuda-max-connections", "99"}, "--cuda-max-connections"},
               {{"--build-workers", "-1"}, "--build-workers"},   {{"--prestart-runners", "-5"}, "--prestart-runners"}};
  for (const auto& c : cases) {
    std::vector<std::string> args = {"eval", "--task", "elementwise/add", "--candidate", "/dev/null"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0];
    EXPECT_NE(r.stderr_text.find(c.needle), std::string::npos) << r.stderr_text;
    EXPECT_TRUE(r.stderr_text.find("range") != std::string::npos || r.stderr_text.find('[') != std::string::npos)
        << r.stderr_text;
    EXPECT_EQ(r.stderr_text.find("error: \n"), std::string::npos) << r.stderr_text;
  }
  auto serve = run({"serve", "--max-connections", "0"});
  EXPECT_EQ(serve.exit_code, 2);
  EXPECT_NE(serve.stderr_text.find("--max-connections"), std::string::npos) << serve.stderr_text;
}

TEST_F(OddInput, TempDirsOfDeadRunsAreSweptLiveOnesKept) {
  const fs::path work = dir_ / "work";
  // A run killed with -9 leaves its run dir behind...
  Child server({kBin, "serve", "--listen", "127.0.0.1:0", "--auth", "none", "--workers", "1", "--db",
                (dir_ / "s.db").string(), "--work-dir", work.string(), kTestCache},
               dir_ / "server.log");
  ASSERT_TRUE(server.wait_for("listening on", 600s)) << server.log();
  std::vector<fs::path> left;
  for (const auto& e : fs::directory_iterator(work)) left.push_back(e.path());
  ASSERT_EQ(left.size(), 1u);
  server.kill(SIGKILL);
  ASSERT_TRUE(fs::exists(left[0]));
  // ... and a live run (this test holds its lock) must be left alone.
  const fs::path live = work / "mooreeval-run-1-live";
  fs::create_directories(live);
  int fd = ::open((live / "owner.lock").c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  ASSERT_TRUE(write_file_atomic(dir_ / "c.txt", "prose").ok());
  auto r = run({"eval", "--task", "elementwise/add", "--candidate", (dir_ / "c.txt").string(), "--work-dir",
                work.string()});
  EXPECT_EQ(r.exit_code, 1) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("removed 1 temp dir(s) of dead runs"), std::string::npos) << r.stderr_text;
  EXPECT_FALSE(fs::exists(left[0]));
  EXPECT_TRUE(fs::exists(live / "owner.lock"));
  // The eval's own run dir is gone after its clean exit: only the live one is left.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(work)) ++entries;
  EXPECT_EQ(entries, 1);
  ::close(fd);
}

TEST_F(OddInput, LaunchShowsProgressAndSeparatesSolutionsFromTheCorpus) {
  // One task, a "solution" that is prose (so: not ok), a corpus with an expected failure
  // and an entry expected ok: quick (no builds), and every label and summary line shows.
  const fs::path tasks = dir_ / "tasks" / "elementwise";
  fs::create_directories(tasks);
  fs::copy_file(kSourceDir / "tasks/elementwise/add.py", tasks / "add.py");
  fs::copy_file(kSourceDir / "tasks/elementwise/add.json", tasks / "add.json");
  fs::create_directories(dir_ / "solutions/cpu/elementwise");
  ASSERT_TRUE(write_file_atomic(dir_ / "solutions/cpu/elementwise/add.py", "prose").ok());
  fs::create_directories(dir_ / "corpus");
  ASSERT_TRUE(write_file_atomic(dir_ / "corpus/empty.txt", "").ok());
  ASSERT_TRUE(write_file_atomic(dir_ / "corpus/meant_ok.md", "prose").ok());
  ASSERT_TRUE(write_file_atomic(dir_ / "corpus/manifest.json",
                                R"([{"file": "empty.txt", "task": "elementwise/add", "backends": ["cpu"], "expected": "format_error"},
                                    {"file": "meant_ok.md", "task": "elementwise/add", "backends": ["cpu"], "expected": "ok"}])")
                  .ok());
  auto r = run({"launch", "--tasks", (dir_ / "tasks").string(), "--solutions", (dir_ / "solutions").string(), "--broken",
                (dir_ / "corpus").string(), "--out", (dir_ / "launch.jsonl").string(), "--workers", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("[3/3"), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("ETA"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("broken"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("corpus meant_ok.md (expect ok)"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("solutions: 0/1 reference solutions verified ok"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("corpus:    1/2 corpus entries got their expected verdict (1 faulty candidates caught, 1 expected ok)"),
            std::string::npos)
      << r.stdout_text;
  auto lines = jsonl(dir_ / "launch.jsonl");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3]["summary"]["solutions"]["samples"], 1);
  EXPECT_EQ(lines[3]["summary"]["corpus"]["entries"], 2);
}

}  // namespace
}  // namespace musacoder::testing
