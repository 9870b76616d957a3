// musacoder quickstart as a user runs it, shortened so that CI can afford it: 8 training tasks, 5 SFT
// updates, one RL step. So little training cannot teach the tiny model a kernel, so the run must end with
// exit 1 and the numbers ("SFT did not help: ... 0.0% before SFT, 0.0% after") after writing every output;
// the full-size run's learning is measured in docs/benchmarks.md. Bad flags and an occupied --out exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/files.h"
#include "process/subprocess.h"

namespace musacoder {
namespace {
namespace fs = std::filesystem;

const fs::path kBinary = fs::path(MUSACODER_BINARY_DIR) / "tools/musacoder/musacoder";

ProcessResult quickstart(const std::vector<std::string>& args) {
  ProcessOptions p;
  p.argv = {kBinary.string(), "quickstart", "--no-progress"};
  p.argv.insert(p.argv.end(), args.begin(), args.end());
  p.deadline = std::chrono::minutes(18);
  auto r = run_process(p);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ProcessResult{};
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("musacoder-quickstart-test-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  return d;
}

TEST(Quickstart, ShortRunWritesEveryOutputAndFailsLoudlyWhenSftDidNotHelp) {
  const fs::path out = fresh_dir("short");
  const ProcessResult r = quickstart({"--out", out.string(), "--train-tasks", "8", "--heldout-tasks", "2",
                                      "--steps", "5", "--rl-steps", "1", "--samples", "2", "--rl-prompts",
                                      "2", "--rl-samples", "2", "--max-new-tokens", "128"});
  const std::string log = r.stdout_text + r.stderr_text;
  ASSERT_EQ(r.exit_code, 1) << log;
  EXPECT_NE(r.stderr_text.find("SFT did not help: held-out Pass@k 0.0% before SFT, 0.0% after"),
            std::string::npos)
      << log;
  for (const char* stage : {"== data", "== model", "== eval before SFT", "== SFT", "== eval after SFT",
                            "== RL", "== eval after RL", "before SFT", "after RL"})
    EXPECT_NE(r.stdout_text.find(stage), std::string::npos) << stage << "\n" << log;

  auto summary = nlohmann::json::parse(read_file(out / "summary.json").value());
  EXPECT_EQ(summary["learned"], false);
  EXPECT_EQ(summary["train_pairs"], 8);
  EXPECT_EQ(summary["heldout_tasks"], 2);
  EXPECT_EQ(summary["heldout_overlaps"], 0);
  EXPECT_EQ(summary["max_new_tokens"], 128);  // the flag's value (the default depends on --backend)
  ASSERT_EQ(summary["points"].size(), 3u);
  for (const auto& p : summary["points"]) EXPECT_TRUE(fs::exists(p["report"].get<std::string>())) << p.dump();
  EXPECT_GT(fs::file_size(out / "curves.png"), 1000u);
  EXPECT_NE(read_file(out / "report.html").value().find("eval-rl/report.html"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "model-init/tokenizer.json"));
  EXPECT_TRUE(fs::exists(out / "rl/model.safetensors"));
  fs::remove_all(out);
}

TEST(Quickstart, BadInputExitsTwoWithAMessage) {
  const fs::path out = fresh_dir("bad");
  ProcessResult r = quickstart({"--out", out.string(), "--backend", "tpu"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("--backend must be cpu or cuda"), std::string::npos) << r.stderr_text;
  EXPECT_FALSE(fs::exists(out));
  r = quickstart({"--out", out.string(), "--max-new-tokens", "-5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("--max-new-tokens must be positive"), std::string::npos) << r.stderr_text;
  EXPECT_FALSE(fs::exists(out));

  fs::create_directories(out);
  ASSERT_TRUE(write_file_atomic(out / "keep.txt", "an earlier run").ok());
  r = quickstart({"--out", out.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("already holds a run"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(read_file(out / "keep.txt").value(), "an earlier run");  // nothing of it was touched

  // A --base-model that is no checkpoint is refused before anything runs, even with --overwrite.
  r = quickstart({"--out", out.string(), "--overwrite", "--base-model", (out / "nowhere").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("--base-model"), std::string::npos) << r.stderr_text;
  r = quickstart({"--out", out.string(), "--overwrite", "--base-model", out.string()});  // no config.json
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("config.json"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(read_file(out / "keep.txt").value(), "an earlier run");
  fs::remove_all(out);
}

}  // namespace
}  // namespace musacoder
