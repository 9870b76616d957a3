// Tokenizer: a Hugging Face tokenizer.json (byte-level BPE) in C++, producing the same ids as the
// tokenizers library's encode(text, add_special_tokens=False) and the same text as its decode().
//
// Pipeline per encode: added tokens (special or not) are cut out first, longest match at the leftmost
// position (honouring lstrip / rstrip / single_word and, for normalized=true tokens, matching after
// normalization); the rest is normalized (NFC for Qwen), pre-tokenized (the model's Split regex, then
// ByteLevel) and each pre-token is BPE-merged. Post-processors are not applied (they add no ids for the
// Qwen and Llama-3 byte-level files; templates add their own special tokens as text).
// Thread-safety: immutable after load; encode/decode are const and safe to call concurrently.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"

namespace musacoder::tokenizer {

struct TokenizerOptions {
  // true: special tokens in the text are plain text (transformers' split_special_tokens=True); non-special
  // added tokens are still matched, as in transformers.
  bool split_special_tokens = false;
  // Largest tokenizer.json accepted (Qwen's is ~11 MB).
  std::size_t max_file_bytes = 256u << 20;
};

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool normalized = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

class Tokenizer {
 public:
  // Loads tokenizer.json (a file, or a directory holding one). Unsupported components are rejected with
  // their type named.
  static Result<Tokenizer> load(const std::filesystem::path& path, const TokenizerOptions& options = {});
  static Result<Tokenizer> from_json_text(std::string_view json_text, const TokenizerOptions& options = {});

  // Ids for `text`. kInvalidArgument when text is not valid UTF-8.
  Result<std::vector<int32_t>> encode(std::string_view text) const;
  // Text for `ids`; invalid UTF-8 produced by partial byte tokens becomes U+FFFD (as the tokenizers
  // library does). kInvalidArgument for an id outside the vocabulary.
  Result<std::string> decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  // One past the largest id (model vocab and added tokens).
  int32_t vocab_size() const { return vocab_size_; }
  const std::vector<AddedToken>& added_tokens() const { return added_; }

 private:
  Tokenizer() = default;
  // kInvalidArgument naming the first vocab or added token not spelt in the byte-level alphabet, or one that
  // is a <0xXX> byte token: where the converter's decoder Sequence would decode differently from ByteLevel.
  Status only_byte_level_tokens() const;
  // Appends the ids of a segment without added tokens.
  Status encode_plain(std::string_view text, std::vector<int32_t>& out) const;
  // Splits `text` on the added tokens whose `normalized` flag equals `normalized`; calls plain(segment) for
  // text between them and appends the matched tokens' ids.
  template <typename Plain>
  Status split_added(std::string_view text, bool normalized, std::vector<int32_t>& out, Plain&& plain) const;

  TokenizerOptions options_;
  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  BpeModel bpe_;
  ByteLevelAlphabet alphabet_;
  bool byte_level_decoder_ = false;
  std::vector<AddedToken> added_;
  std::vector<std::vector<std::size_t>> added_by_first_byte_;  // [byte] -> indexes into added_, longest first
  int32_t vocab_size_ = 0;
};

}  // namespace musacoder::tokenizer
