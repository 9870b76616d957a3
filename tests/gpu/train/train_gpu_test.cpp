// musacoder train-sft on CUDA (skipped without an NVIDIA device): bf16 + activation checkpointing learns the tiny
// set, its first loss agrees with the CPU fp32 run, and (with two GPUs) two NCCL ranks equal one process.
// No libtorch here: the trainer runs as the user runs it; results come from metrics.jsonl.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "process/subprocess.h"
#include "support/python_reference.h"

namespace musacoder {
namespace {

namespace fs = std::filesystem;
const fs::path kScript = fs::path(MUSACODER_SOURCE_DIR) / "tests/integration/train/sft_reference.py";
const fs::path kTool = fs::path(MUSACODER_BINARY_DIR) / "tools/musacoder/musacoder";

int gpu_count() {
  int n = 0;
  for (int i = 0; i < 16; ++i) n += fs::exists("/dev/nvidia" + std::to_string(i)) ? 1 : 0;
  return n;
}

class TrainGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "no NVIDIA device (/dev/nvidiactl missing)";
    auto ref = testing::cached_python_reference("sft", kScript, {"make"}, std::chrono::seconds(300));
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    ref_ = *ref;
    auto tmp = TempDir::create("mc-sft-gpu");
    ASSERT_TRUE(tmp.ok());
    tmp_.emplace(std::move(*tmp));
  }
  ProcessResult train(const std::string& name, std::vector<std::string> extra) {
    ProcessOptions o;
    o.argv = {kTool.string(), "train-sft", "--base-model", (ref_ / "model").string(), "--dataset",
              (ref_ / "train.jsonl").string(), "--output-dir", (tmp_->path() / name).string(), "--max-seq-len", "256",
              "--learning-rate", "3e-3", "--lr-scheduler", "constant", "--per-device-batch-tokens", "4096",
              "--no-progress"};
    o.argv.insert(o.argv.end(), extra.begin(), extra.end());
    o.deadline = std::chrono::seconds(300);
    o.env_unset = {"WORLD_SIZE", "RANK", "MASTER_PORT"};
    auto r = run_process(o);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : ProcessResult{};
  }
  std::vector<nlohmann::json> metrics(const std::string& name) {
    std::vector<nlohmann::json> out;
    std::ifstream in(tmp_->path() / name / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      if (j["split"] == "train") out.push_back(j);
    }
    return out;
  }
  fs::path ref_;
  std::optional<TempDir> tmp_;
};

TEST_F(TrainGpu, Bf16WithCheckpointingLearnsAndAgreesWithCpuAtTheStart) {
  ProcessResult gpu = train("gpu", {"--backend", "cuda", "--bf16", "--gradient-checkpointing", "--max-steps", "60"});
  ASSERT_TRUE(gpu.succeeded()) << gpu.stderr_text;
  ProcessResult cpu = train("cpu", {"--backend", "cpu", "--max-steps", "1"});
  ASSERT_TRUE(cpu.succeeded()) << cpu.stderr_text;
  auto g = metrics("gpu"), c = metrics("cpu");
  ASSERT_EQ(g.size(), 60u);
  ASSERT_EQ(c.size(), 1u);
  const double first = g.front()["loss"].get<double>(), last = g.back()["loss"].get<double>();
  EXPECT_NEAR(first, c.front()["loss"].get<double>(), 0.02 * first);  // bf16 vs fp32, same weights and batch
  EXPECT_LT(last, first / 3);
  EXPECT_GT(g.back()["peak_memory_gib"].get<double>(), 0.0);
  EXPECT_GT(g.back()["mfu"].get<double>(), 0.0);
  std::printf("GPU_RESULT train-sft bf16+ckpt: loss %.4f -> %.4f, %.0f tokens/s\n", first, last,
              g.back()["tokens_per_second"].get<double>());
}

TEST_F(TrainGpu, TwoNcclRanksEqualOneProcess) {
  if (gpu_count() < 2) GTEST_SKIP() << "needs two GPUs";
  const std::vector<std::string> common = {"--backend", "cuda", "--max-steps", "3", "--per-device-batch-tokens",
                                           "512"};
  auto one = common, two = common;
  one.insert(one.end(), {"--gradient-accumulation-steps", "2"});
  two.insert(two.end(), {"--nproc-per-node", "2"});
  ProcessResult a = train("one", one), b = train("two", two);
  ASSERT_TRUE(a.succeeded()) << a.stderr_text;
  ASSERT_TRUE(b.succeeded()) << b.stderr_text;
  auto ma = metrics("one"), mb = metrics("two");
  ASSERT_EQ(ma.size(), mb.size());
  for (std::size_t i = 0; i < ma.size(); ++i)
    EXPECT_NEAR(ma[i]["loss"].get<double>(), mb[i]["loss"].get<double>(), 1e-4) << "step " << i + 1;
}

}  // namespace
}  // namespace musacoder
