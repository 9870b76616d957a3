// Parity with transformers on tiny random checkpoints (Qwen2, Qwen3, Llama and every rope_scaling type):
// logits within 1e-4 (fp32), KV-cache decoding equal to the full forward, packed sequences equal to
// separate forwards, and our saved checkpoint reloading in transformers with identical weights and logits.
// The reference side is hf_reference.py (transformers, run once per suite).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/files.h"
#include "process/subprocess.h"
#include "model/checkpoint.h"
#include "support/python_reference.h"

namespace musacoder::model {
namespace {

const std::filesystem::path kScript =
    std::filesystem::path(MUSACODER_SOURCE_DIR) / "tests/integration/model/hf_reference.py";
const std::vector<std::string> kCases = {"qwen2",
                                         "qwen3",
                                         "llama",
                                         "llama_rope_llama3",
                                         "qwen2_rope_yarn",
                                         "llama_rope_linear",
                                         "qwen3_rope_dynamic"};
constexpr double kTolerance = 1e-4;

ProcessResult python(const std::vector<std::string>& args) {
  ProcessOptions o;
  o.argv = {"python3", kScript.string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.deadline = std::chrono::seconds(300);
  o.env_set["TRANSFORMERS_VERBOSITY"] = "error";
  o.env_set["HF_HUB_OFFLINE"] = "1";
  o.env_set["OMP_NUM_THREADS"] = "1";
  auto r = run_process(o);
  if (!r.ok()) {
    ProcessResult failed;
    failed.stderr_text = r.status().to_string();
    return failed;
  }
  return *r;
}

class HfParity : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    auto ref = testing::cached_python_reference("model", kScript, {"make"}, std::chrono::seconds(300));
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    ref_dir_ = *ref;
    auto scratch = TempDir::create("mc-model-parity");
    ASSERT_TRUE(scratch.ok()) << scratch.status().to_string();
    scratch_ = new TempDir(std::move(*scratch));
  }
  static void TearDownTestSuite() {
    delete scratch_;
    scratch_ = nullptr;
  }
  void SetUp() override {
    if (ref_dir_.empty()) GTEST_FAIL() << "no reference (hf_reference.py make failed)";
  }
  std::filesystem::path case_dir() const { return ref_dir_ / GetParam(); }

  // The reference: ids_k and logits_k from ref.safetensors.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> reference() const {
    auto ck = SafetensorsCheckpoint::open(case_dir() / "ref.safetensors");
    EXPECT_TRUE(ck.ok()) << ck.status().to_string();
    std::vector<std::pair<torch::Tensor, torch::Tensor>> out;
    for (int k = 0; ck.ok() && ck->contains("ids_" + std::to_string(k)); ++k) {
      out.emplace_back(ck->tensor("ids_" + std::to_string(k)).value().clone(),
                       ck->tensor("logits_" + std::to_string(k)).value().clone());
    }
    return out;
  }
  static inline std::filesystem::path ref_dir_;
  static inline TempDir* scratch_ = nullptr;  // our saved checkpoints
};

double max_abs(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

TEST_P(HfParity, LogitsMatchTransformers) {
  auto model = load_pretrained(case_dir());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  torch::NoGradGuard no_grad;
  auto ref = reference();
  ASSERT_GE(ref.size(), 2u);
  for (const auto& [ids, logits] : ref) {
    torch::Tensor ours = (*model)->forward({ids});
    ASSERT_EQ(ours.sizes(), logits.sizes());
    double d = max_abs(ours, logits);
    EXPECT_LE(d, kTolerance) << GetParam() << " T=" << ids.size(1) << " B=" << ids.size(0);
    std::printf("PARITY %s B=%ld T=%ld max_abs=%.3g\n", GetParam().c_str(), ids.size(0), ids.size(1), d);
  }
}

TEST_P(HfParity, KvCacheDecodeEqualsFullForward) {
  if (GetParam().ends_with("dynamic")) {
    GTEST_SKIP() << "dynamic NTK RoPE re-scales with the current length while cached keys keep the rotation "
                    "they were stored with (transformers' cache behaves the same), so decode != full forward";
  }
  auto model = load_pretrained(case_dir());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  torch::NoGradGuard no_grad;
  auto ref = reference();
  const auto& [ids, logits] = ref.back();  // the longest: a batch of two rows
  const int64_t T = ids.size(1), prefill = T / 3;
  KVCache cache = (*model)->new_cache(ids.size(0), T);
  std::vector<torch::Tensor> steps;
  steps.push_back((*model)->forward_step(ids.narrow(1, 0, prefill), cache));
  // A chunk of several tokens on top of a filled cache exercises the offset mask.
  steps.push_back((*model)->forward_step(ids.narrow(1, prefill, 3), cache));
  for (int64_t t = prefill + 3; t < T; ++t)
    steps.push_back((*model)->forward_step(ids.narrow(1, t, 1), cache));
  EXPECT_EQ(cache.length, T);
  torch::Tensor incremental = torch::cat(steps, 1);
  EXPECT_LE(max_abs(incremental, (*model)->forward({ids})), kTolerance);
  EXPECT_LE(max_abs(incremental, logits), kTolerance);
  EXPECT_THROW((*model)->forward_step(ids.narrow(1, 0, 1), cache), c10::Error);  // cache full
}

TEST_P(HfParity, PackedSequencesEqualSeparateForwards) {
  if (GetParam().ends_with("dynamic")) {
    GTEST_SKIP()
        << "dynamic NTK RoPE depends on the longest position in the call (in transformers too), so a "
           "packed row is not equivalent to separate calls";
  }
  auto model = load_pretrained(case_dir());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  torch::NoGradGuard no_grad;
  auto ref = reference();
  // Pack every single-row reference sequence into one row; sequence ids 0, 1, 2, ...
  std::vector<torch::Tensor> ids, seq, expected;
  for (std::size_t k = 0; k < ref.size(); ++k) {
    if (ref[k].first.size(0) != 1) continue;
    ids.push_back(ref[k].first);
    seq.push_back(torch::full_like(ref[k].first, static_cast<int64_t>(k)));
    expected.push_back(ref[k].second);
  }
  ASSERT_GE(ids.size(), 1u);
  // The two-row case adds its rows as two more sequences.
  const auto& [bids, blogits] = ref.back();
  if (bids.size(0) == 2) {
    for (int64_t r = 0; r < 2; ++r) {
      ids.push_back(bids.narrow(0, r, 1));
      seq.push_back(torch::full_like(bids.narrow(0, r, 1), 100 + r));
      expected.push_back(blogits.narrow(0, r, 1));
    }
  }
  torch::Tensor packed = (*model)->forward({torch::cat(ids, 1), {}, torch::cat(seq, 1)});
  EXPECT_LE(max_abs(packed, torch::cat(expected, 1)), kTolerance) << GetParam() << ": cross-contamination?";
}

TEST_P(HfParity, SavedCheckpointReloadsInTransformers) {
  auto model = load_pretrained(case_dir());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto saved = scratch_->path() / (GetParam() + "_saved");
  ModelOptions o;
  if (GetParam() == "qwen3") o.max_shard_bytes = 40000;  // forces shards + model.safetensors.index.json
  ASSERT_TRUE(save_pretrained(*model, saved, o).ok());
  if (GetParam() == "qwen3") {
    ASSERT_TRUE(std::filesystem::exists(saved / "model.safetensors.index.json"));
  }
  // Our own reader loads it back to the same logits.
  auto again = load_pretrained(saved);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  torch::NoGradGuard no_grad;
  auto ref = reference();
  const auto& [ids, logits] = ref.back();
  EXPECT_EQ(max_abs((*again)->forward({ids}), (*model)->forward({ids})), 0.0);
  ProcessResult r = python({"check", "--case", case_dir().string(), "--saved", saved.string()});
  EXPECT_TRUE(r.succeeded()) << r.describe() << "\n" << r.stdout_text << r.stderr_text;
}

INSTANTIATE_TEST_SUITE_P(Tiny, HfParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace musacoder::model
