// Parity of the Qwen3.5 hybrid with transformers on tiny random checkpoints (qwen3_5_reference.py make):
// VLM-wrapped (model.language_model.*, with a vision tower and an mtp head to skip) and text-only naming,
// tied and untied. Logits within 1e-4 (fp32) for sequences up to 150 tokens (> the 64-token delta-rule
// chunk); incremental decoding (conv + recurrent state + KV cache) equal to the full forward; packed
// sequences equal to separate forwards; gradients of a cross-entropy loss within 1e-4 of transformers';
// our saved checkpoint reloading in transformers with identical weights and logits.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/files.h"
#include "process/subprocess.h"
#include "model/checkpoint.h"
#include "support/python_reference.h"

namespace musacoder::model {
namespace {

const std::filesystem::path kScript =
    std::filesystem::path(MUSACODER_SOURCE_DIR) / "tests/integration/model/qwen3_5_reference.py";
const std::vector<std::string> kCases = {"vlm_tied", "vlm_untied", "text_untied", "text_tied"};
constexpr double kTolerance = 1e-4;

double max_abs(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

class Qwen35Parity : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    auto ref = testing::cached_python_reference("qwen3_5", kScript, {"make"}, std::chrono::seconds(600));
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    ref_dir_ = *ref;
  }
  void SetUp() override {
    if (ref_dir_.empty()) GTEST_FAIL() << "no reference (qwen3_5_reference.py make failed)";
  }
  std::filesystem::path case_dir() const { return ref_dir_ / GetParam(); }
  Qwen35 load(LoadReport* report = nullptr) const {
    auto m = load_qwen35(case_dir(), {}, report);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    return m.ok() ? *m : Qwen35(nullptr);
  }
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
};

TEST_P(Qwen35Parity, LogitsMatchTransformers) {
  LoadReport report;
  Qwen35 model = load(&report);
  ASSERT_TRUE(model);
  if (GetParam() == "vlm_tied") {  // the vision tower and the injected mtp head are skipped, and said so
    bool visual = false, mtp = false;
    for (const auto& n : report.skipped) {
      visual |= n.starts_with("model.visual.");
      mtp |= n == "mtp.fc.weight";
    }
    EXPECT_TRUE(visual && mtp) << report.skipped.size() << " skipped";
  }
  torch::NoGradGuard no_grad;
  auto ref = reference();
  ASSERT_EQ(ref.size(), 4u);
  for (const auto& [ids, logits] : ref) {
    torch::Tensor ours = model->forward({ids});
    ASSERT_EQ(ours.sizes(), logits.sizes());
    const double d = max_abs(ours, logits);
    EXPECT_LE(d, kTolerance) << GetParam() << " B=" << ids.size(0) << " T=" << ids.size(1);
    std::printf("PARITY %s B=%ld T=%ld max_abs=%.3g\n", GetParam().c_str(), ids.size(0), ids.size(1), d);
  }
}

TEST_P(Qwen35Parity, IncrementalDecodingEqualsFullForward) {
  Qwen35 model = load();
  ASSERT_TRUE(model);
  torch::NoGradGuard no_grad;
  const auto [ids, logits] = reference().back();  // 2 rows x 150 tokens
  const int64_t T = ids.size(1), prefill = 67;      // a prefill past one chunk, then steps
  HybridCache cache = model->new_cache(ids.size(0), T);
  std::vector<torch::Tensor> steps;
  steps.push_back(model->forward_step(ids.narrow(1, 0, prefill), cache));
  steps.push_back(model->forward_step(ids.narrow(1, prefill, 5), cache));  // multi-token on a filled state
  for (int64_t t = prefill + 5; t < T; ++t) steps.push_back(model->forward_step(ids.narrow(1, t, 1), cache));
  EXPECT_EQ(cache.length, T);
  torch::Tensor incremental = torch::cat(steps, 1);
  EXPECT_LE(max_abs(incremental, model->forward({ids})), kTolerance);
  EXPECT_LE(max_abs(incremental, logits), kTolerance);
  EXPECT_THROW(model->forward_step(ids.narrow(1, 0, 1), cache), c10::Error);  // capacity reached
}

TEST_P(Qwen35Parity, PackedSequencesEqualSeparateForwards) {
  Qwen35 model = load();
  ASSERT_TRUE(model);
  torch::NoGradGuard no_grad;
  auto ref = reference();
  std::vector<torch::Tensor> ids, seq, expected;
  int64_t next_id = 0;
  for (const auto& [r_ids, r_logits] : ref) {
    for (int64_t r = 0; r < r_ids.size(0); ++r) {
      ids.push_back(r_ids.narrow(0, r, 1));
      seq.push_back(torch::full_like(ids.back(), next_id++));
      expected.push_back(r_logits.narrow(0, r, 1));
    }
  }
  // One row of 1 + 9 + 70 + 150 + 150 tokens: sequences start mid-chunk and span chunk boundaries.
  torch::Tensor packed = model->forward({torch::cat(ids, 1), {}, torch::cat(seq, 1)});
  EXPECT_LE(max_abs(packed, torch::cat(expected, 1)), kTolerance) << GetParam() << ": cross-contamination?";
}

TEST_P(Qwen35Parity, GradientsMatchTransformers) {
  Qwen35 model = load();
  ASSERT_TRUE(model);
  auto ck = SafetensorsCheckpoint::open(case_dir() / "grad.safetensors");
  ASSERT_TRUE(ck.ok()) << ck.status().to_string();
  torch::Tensor ids = ck->tensor("grad_ids").value();
  torch::Tensor logits = model->forward({ids});
  const int64_t V = logits.size(-1), T = ids.size(1);
  torch::Tensor loss = torch::nn::functional::cross_entropy(logits.narrow(1, 0, T - 1).reshape({-1, V}),
                                                            ids.narrow(1, 1, T - 1).reshape({-1}));
  loss.backward();
  EXPECT_LE(std::abs(loss.item<double>() - ck->tensor("loss").value().item<double>()), 1e-5);
  int compared = 0;
  for (const auto& p : model->named_parameters()) {
    ASSERT_TRUE(ck->contains(p.key())) << "no reference gradient for " << p.key();
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    const double d = max_abs(p.value().grad(), ck->tensor(p.key()).value());
    EXPECT_LE(d, kTolerance) << p.key();
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int>(model->parameters().size()));
}

TEST_P(Qwen35Parity, SavedCheckpointReloadsInTransformers) {
  Qwen35 model = load();
  ASSERT_TRUE(model);
  auto scratch = TempDir::create("mc-qwen35-save");
  ASSERT_TRUE(scratch.ok());
  const auto saved = scratch->path() / "saved";
  ASSERT_TRUE(save_model(*model, saved).ok());
  auto again = load_model(saved);  // dispatches on model_type
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  ASSERT_TRUE(as_qwen35(*again));
  torch::NoGradGuard no_grad;
  const auto [ids, logits] = reference().back();
  EXPECT_EQ(max_abs((*again)->forward({ids}), model->forward({ids})), 0.0);
  ProcessOptions o;
  o.argv = {"python3", kScript.string(), "check", "--case", case_dir().string(), "--saved", saved.string()};
  o.deadline = std::chrono::seconds(300);
  o.env_set = {{"TRANSFORMERS_VERBOSITY", "error"}, {"HF_HUB_OFFLINE", "1"}, {"OMP_NUM_THREADS", "1"}};
  auto r = run_process(o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->succeeded()) << r->describe() << "\n" << r->stdout_text << r->stderr_text;
}

INSTANTIATE_TEST_SUITE_P(Tiny, Qwen35Parity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace musacoder::model
