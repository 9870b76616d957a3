// Tokenizer pieces on tiny hand-written tokenizer.json files: merge order, added tokens, errors.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/chat_template.h"

namespace musacoder::tokenizer {
namespace {

using nlohmann::json;

// A byte-level BPE over the letters a, b, c, space (Ġ) with merges a b -> ab, ab c -> abc, Ġ a -> Ġa.
json tiny(json pre_tokenizer = nullptr) {
  if (pre_tokenizer.is_null()) {
    pre_tokenizer = {{"type", "Sequence"},
                     {"pretokenizers",
                      {{{"type", "Split"},
                        {"pattern", {{"Regex", R"( ?\p{L}+|\s+(?!\S)|\s+|[^\s\p{L}]+)"}}},
                        {"behavior", "Isolated"},
                        {"invert", false}},
                       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  }
  json vocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"Ġ", 3}, {"ab", 4}, {"abc", 5}, {"Ġa", 6}, {"!", 7}};
  return {
      {"added_tokens",
       {{{"id", 8}, {"content", "<|end|>"}, {"special", true}, {"normalized", false}},
        {{"id", 9}, {"content", "<|end|>x"}, {"special", false}, {"normalized", false}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", pre_tokenizer},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b", json::array({"ab", "c"}), "Ġ a"}}}}};
}

std::vector<int32_t> ids(const Tokenizer& t, const std::string& s) {
  auto r = t.encode(s);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : std::vector<int32_t>{};
}

TEST(Tokenizer, MergesByRankAndSplitsOnAddedTokensLongestFirst) {
  auto t = Tokenizer::from_json_text(tiny().dump());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(ids(*t, "abc"), (std::vector<int32_t>{5}));
  // " ab": a+b (rank 0) merges before Ġ+a (rank 2), so Ġ stays alone; " a" becomes Ġa.
  EXPECT_EQ(ids(*t, "abcab ab a!"), (std::vector<int32_t>{5, 4, 3, 4, 6, 7}));
  EXPECT_EQ(ids(*t, "ab<|end|>c"), (std::vector<int32_t>{4, 8, 2}));
  EXPECT_EQ(ids(*t, "<|end|>xa"), (std::vector<int32_t>{9, 0}));  // longest added token wins
  EXPECT_EQ(t->decode({5, 8, 6}).value(), "abc<|end|> a");
  EXPECT_EQ(t->decode({5, 8, 6}, /*skip_special_tokens=*/true).value(), "abc a");
  EXPECT_FALSE(t->decode({42}).ok());
}

TEST(Tokenizer, RejectsBadInputWithMessages) {
  auto t = Tokenizer::from_json_text(tiny().dump());
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->encode("\xff\xfe").ok());  // invalid UTF-8
  auto unknown = t->encode("z");             // 'z' is not in this vocab and there is no unk
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("not in the vocab"), std::string::npos);

  EXPECT_FALSE(Tokenizer::from_json_text("{not json").ok());
  json j = tiny();
  j["model"]["type"] = "WordPiece";
  EXPECT_NE(Tokenizer::from_json_text(j.dump()).status().message().find("BPE"), std::string::npos);
  j = tiny({{"type", "Metaspace"}});
  EXPECT_NE(Tokenizer::from_json_text(j.dump()).status().message().find("Metaspace"), std::string::npos);
  j = tiny({{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}});
  EXPECT_NE(Tokenizer::from_json_text(j.dump()).status().message().find("regex"), std::string::npos);
  j = tiny();
  j["model"]["merges"] = {"a z"};
  EXPECT_FALSE(Tokenizer::from_json_text(j.dump()).ok());
}

// transformers' GGUF converter: byte_fallback and Sequence[ByteFallback, Fuse, Replace("▁", " "), ByteLevel]
// load where they cannot change an id or a decoded byte, and are refused where they could.
TEST(Tokenizer, ConverterByteFallbackLoadsOnlyWhereItEqualsByteLevel) {
  json j = tiny();
  j["model"]["byte_fallback"] = true;
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   {{{"type", "ByteFallback"}},
                    {{"type", "Fuse"}},
                    {{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                    {{"type", "ByteLevel"}}}}};
  auto t = Tokenizer::from_json_text(j.dump());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(ids(*t, "abcab ab a!"), (std::vector<int32_t>{5, 4, 3, 4, 6, 7}));
  EXPECT_EQ(t->decode({5, 8, 6}).value(), "abc<|end|> a");

  json bytes = j;  // a <0xXX> token: the fallback (and the ByteFallback decoder) would act
  bytes["model"]["vocab"]["<0x41>"] = 10;
  EXPECT_NE(Tokenizer::from_json_text(bytes.dump()).status().message().find("byte tokens"),
            std::string::npos);
  json outside = j;  // an added token outside the byte alphabet: Fuse would change how it decodes
  outside["added_tokens"].push_back({{"id", 10}, {"content", "\xE2\x96\x81x"}, {"special", true}});
  EXPECT_NE(Tokenizer::from_json_text(outside.dump()).status().message().find("byte-level alphabet"),
            std::string::npos);
  json other = j;  // any other sequence
  other["decoder"]["decoders"][2]["content"] = "_";
  EXPECT_NE(Tokenizer::from_json_text(other.dump()).status().message().find("Sequence is not supported"),
            std::string::npos);
}

TEST(ByteLevel, AlphabetRoundTripsEveryByteAndLossyMatchesRust) {
  ByteLevelAlphabet a;
  for (int b = 0; b < 256; ++b) {
    std::size_t i = 0;
    EXPECT_EQ(a.byte_of(next_code_point(a.char_of(static_cast<uint8_t>(b)), i)), b);
  }
  EXPECT_EQ(a.encode(" "), "Ġ");
  EXPECT_EQ(utf8_lossy("a\xE4\xBD"), "a\xEF\xBF\xBD");            // truncated 3-byte sequence: one U+FFFD
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");  // valid emoji unchanged
  EXPECT_EQ(utf8_lossy("\xC0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong: each byte replaced
}

TEST(ChatTemplate, RendersChatMLAndLlama3) {
  std::vector<ChatMessage> m = {{"user", " hi \n"}, {"assistant", "yo"}};
  ChatTemplateOptions o;
  o.default_system = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
  EXPECT_EQ(
      render_chat(m, o).value(),
      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
      "<|im_start|>user\n hi \n<|im_end|>\n<|im_start|>assistant\nyo<|im_end|>\n<|im_start|>assistant\n");
  o.format = ChatFormat::kLlama3;
  o.add_generation_prompt = false;
  EXPECT_EQ(render_chat(m, o).value(),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nyo<|eot_id|>");
  EXPECT_FALSE(render_chat({{"tool", "x"}}, o).ok());
}

TEST(ChatTemplate, RendersQwen35ThinkingTurns) {
  // Earlier assistant turns lose their reasoning; the one after the last user turn keeps it (from
  // reasoning_content, trimmed); contents are trimmed; thinking on opens a think block, off closes one.
  std::vector<ChatMessage> m = {{"system", " sys "},
                                {"user", "q1"},
                                {"assistant", "<think>\nold\n</think>\n\na1"},
                                {"user", "q2\n"},
                                {"assistant", "a2", " why "}};
  ChatTemplateOptions o;
  o.format = ChatFormat::kQwen35;
  o.add_generation_prompt = false;
  EXPECT_EQ(render_chat(m, o).value(),
            "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n"
            "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\nwhy\n</think>\n\na2<|im_end|>\n");
  o.add_generation_prompt = true;
  EXPECT_TRUE(render_chat({{"user", "x"}}, o).value().ends_with("<|im_start|>assistant\n<think>\n"));
  o.enable_thinking = false;
  EXPECT_TRUE(render_chat({{"user", "x"}}, o).value().ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(render_chat({{"user", "x"}, {"system", "late"}}, o).ok());
  EXPECT_FALSE(render_chat({}, o).ok());
}

}  // namespace
}  // namespace musacoder::tokenizer
