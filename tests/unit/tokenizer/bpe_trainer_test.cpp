// The BPE trainer on tiny corpora: hand-computed merges, vocab size, round trips, determinism, errors.
#include "tokenizer/bpe_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace musacoder::tokenizer {
namespace {

using nlohmann::json;

// Chat-like texts with C++ / Python kernel code, generated from the index (no randomness needed).
std::vector<std::string> code_corpus(int n) {
  const char* ops[] = {"relu", "gelu", "softmax", "layernorm", "matmul", "sigmoid"};
  std::vector<std::string> texts;
  for (int i = 0; i < n; ++i) {
    std::string op = ops[i % 6], k = std::to_string(i);
    texts.push_back(
        "<|im_start|>user\nWrite a CUDA " + op + " kernel number " + k + ".<|im_end|>\n" +
        "<|im_start|>assistant\n__global__ void " + op + "_kernel(const float* x, float* out, int n) {\n" +
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = " + op + "(x[i]) * " + k +
        ";\n}\ndef " + op + "(x):\n    return torch." + op + "(x) + " + k + "<|im_end|>");
  }
  texts.push_back("Ünïcödé: 内核函数 🚀 ≤ ≥ → λ x: x² — ‘quotes’ \t\ttabs\r\n");
  return texts;
}

Tokenizer load(const std::string& json_text) {
  auto t = Tokenizer::from_json_text(json_text);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return std::move(*t);
}

std::string train(const std::vector<std::string>& texts, const BpeTrainerOptions& o = {}) {
  auto j = train_bpe_tokenizer_json(texts, o);
  EXPECT_TRUE(j.ok()) << j.status().to_string();
  return j.ok() ? *j : std::string();
}

std::vector<std::string> merges_of(const std::string& json_text) {
  const json j = json::parse(json_text);  // kept alive: the loop iterates a part of it
  std::vector<std::string> out;
  for (const auto& m : j["model"]["merges"])
    out.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
  return out;
}

// Pre-tokens: "hug" x1, "Ġhug" x2, "Ġpug", "Ġpun", "Ġbun" (Ġ = space). Pair counts: u g = 4 (hug, Ġhug x2,
// Ġpug) -> "ug"; then h ug = 3 -> "hug"; then three pairs at 2: u n (pun, bun), Ġ p (pug, pun), Ġ hug.
// Ties go to the smallest (left id, right id): u = id 87 ('u' - '!' + 3) is below Ġ (U+0120, near the end
// of the byte symbols); p = 82 is below hug = 260. Then every pair occurs once: below min_frequency 2.
TEST(BpeTrainer, FirstMergesAreTheHandComputedOnes) {
  std::string j = train({"hug hug hug pug pun bun"});
  EXPECT_EQ(merges_of(j), (std::vector<std::string>{"u g", "h ug", "u n", "Ġ p", "Ġ hug"}));
  Tokenizer t = load(j);
  EXPECT_EQ(t.vocab_size(), 3 + 256 + 5);
  EXPECT_EQ(t.token_to_id("ug"), 259);
  EXPECT_EQ(t.token_to_id("Ġhug"), 263);
  EXPECT_EQ(t.encode(" hug pun").value(), (std::vector<int32_t>{263, *t.token_to_id("Ġp"), 261}));
}

TEST(BpeTrainer, VocabSizeLimitsTheMerges) {
  BpeTrainerOptions o;
  o.vocab_size = 3 + 256 + 2;
  std::string j = train({"hug hug hug pug pun bun"}, o);
  EXPECT_EQ(merges_of(j), (std::vector<std::string>{"u g", "h ug"}));
  EXPECT_EQ(load(j).vocab_size(), o.vocab_size);
}

TEST(BpeTrainer, VocabSizeIsReachedOrMinFrequencyStops) {
  BpeTrainerOptions o;
  o.vocab_size = 350;
  EXPECT_EQ(load(train(code_corpus(200), o)).vocab_size(), 350);
  // The templated corpus runs out of pairs seen twice long before 5000 tokens; with min_frequency 1
  // (every pair that occurs at all) it gets further.
  o.vocab_size = 5000;
  int32_t twice = load(train(code_corpus(200), o)).vocab_size();
  o.min_frequency = 1;
  int32_t once = load(train(code_corpus(200), o)).vocab_size();
  EXPECT_GT(twice, 350);
  EXPECT_LT(twice, once);
  EXPECT_LT(once, 5000);
}

TEST(BpeTrainer, ByteSymbolsFollowTheSpecialsInCodePointOrder) {
  json j = json::parse(train({"abc abc"}));
  EXPECT_EQ(j["version"], "1.0");
  EXPECT_EQ(j["model"]["type"], "BPE");
  EXPECT_EQ(j["added_tokens"][1]["content"], "<|im_start|>");
  EXPECT_EQ(j["added_tokens"][1]["special"], true);
  const auto& vocab = j["model"]["vocab"];
  EXPECT_EQ(vocab["<|endoftext|>"], 0);
  EXPECT_EQ(vocab["!"], 3);             // U+0021, the smallest byte symbol
  EXPECT_EQ(vocab["\xC3\xBF"], 190);    // U+00FF: the last of the 94 + 12 + 82 bytes that map to themselves
  EXPECT_EQ(vocab["Ġ"], 3 + 188 + 32);  // byte 0x20 -> U+0120, the 33rd of the remapped bytes
  EXPECT_EQ(vocab["Ń"], 258);           // U+0143, the largest
}

TEST(BpeTrainer, EncodeDecodeRoundTripsCodeAndUnicode) {
  BpeTrainerOptions o;
  o.vocab_size = 600;
  Tokenizer t = load(train(code_corpus(100), o));
  for (const std::string s :
       {"__global__ void tanh_kernel(float* y) { y[0] = 1.0f; }", "def f(x):\n\treturn x ** 2  # 平方\n",
        "Ünïcödé 🚀🔥 ≤≥ 内核 \x01\x7f", "  leading and trailing  \n\n", "<|im_start|>user\nhi<|im_end|>"}) {
    auto ids = t.encode(s);
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    EXPECT_EQ(t.decode(*ids).value(), s);
  }
}

TEST(BpeTrainer, SameInputGivesIdenticalJsonWhateverTheTextOrder) {
  auto texts = code_corpus(50);
  BpeTrainerOptions o;
  o.vocab_size = 500;
  std::string first = train(texts, o);
  EXPECT_EQ(train(texts, o), first);
  std::reverse(texts.begin(), texts.end());  // word counts do not depend on the order
  EXPECT_EQ(train(texts, o), first);
}

TEST(BpeTrainer, SpecialTokensEncodeToTheirIdsAndAreNotMergedOver) {
  Tokenizer t = load(train(code_corpus(50)));
  EXPECT_EQ(t.encode("<|endoftext|><|im_start|><|im_end|>").value(), (std::vector<int32_t>{0, 1, 2}));
  // "<|im_start|>" pre-tokenizes as "<|", "im", "_start", "|>": "_start" is learnt only from the specials.
  auto has_im_token = [](const std::string& text) {
    return json::parse(text)["model"]["vocab"].contains("_start");
  };
  EXPECT_FALSE(has_im_token(train(code_corpus(50))));
  BpeTrainerOptions as_text;  // the tokenizers library's behaviour: "<|im_start|>" is counted as text
  as_text.cut_special_tokens = false;
  EXPECT_TRUE(has_im_token(train(code_corpus(50), as_text)));
}

TEST(BpeTrainer, BadInputIsInvalidArgument) {
  auto code = [](const std::vector<std::string>& texts, BpeTrainerOptions o) {
    return train_bpe_tokenizer_json(texts, o).status().code();
  };
  BpeTrainerOptions small;
  small.vocab_size = 256 + 2;
  BpeTrainerOptions repeated;
  repeated.special_tokens = {"<s>", "<s>"};
  BpeTrainerOptions byte_symbol;
  byte_symbol.special_tokens = {"a"};
  BpeTrainerOptions negative;
  negative.min_frequency = -1;
  EXPECT_EQ(code({"text"}, small), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({"text"}, repeated), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({"text"}, byte_symbol), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({"text"}, negative), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({"ok", "bad \xff utf-8"}, {}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({}, {}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({"", ""}, {}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({"<|im_start|><|im_end|>"}, {}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({"text"}, {}), StatusCode::kOk);
  EXPECT_NE(train_bpe_tokenizer_json({}, small).status().message().find("vocab_size"), std::string::npos);
}

}  // namespace
}  // namespace musacoder::tokenizer
