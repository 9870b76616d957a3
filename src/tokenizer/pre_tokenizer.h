// Normalizers and pre-tokenizers of tokenizer.json, the subset used by byte-level BPE families (Qwen2/2.5/3,
// Llama 3, GPT-2 style): normalizer null | NFC | Sequence; pre_tokenizer Split (Regex or String pattern,
// behavior Isolated or Removed) | ByteLevel (add_prefix_space, use_regex) | Sequence. Anything else is
// rejected at load with its type named. Split regexes run on PCRE2 (UTF + UCP, JIT when available), which
// handles the lookahead `\s+(?!\S)` that std::regex cannot.
// Thread-safety: immutable after construction; split() is safe to call concurrently (per-call match data).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/byte_level.h"

namespace musacoder::tokenizer {

class Normalizer {
 public:
  static Result<Normalizer> from_json(const nlohmann::json& j);  // null -> identity
  // `text` must be valid UTF-8.
  Result<std::string> normalize(std::string_view text) const;
  bool identity() const { return !nfc_; }

 private:
  bool nfc_ = false;
};

class Regex;  // a compiled PCRE2 pattern (pre_tokenizer.cpp)

class PreTokenizer {
 public:
  static Result<PreTokenizer> from_json(const nlohmann::json& j);  // null -> whole text is one piece
  PreTokenizer();
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Splits one normalized segment into pre-tokens, mapped to the byte-level alphabet when a ByteLevel
  // step is present (it always is for these families).
  Result<std::vector<std::string>> split(std::string_view text) const;

 private:
  struct Step {
    enum Kind { kSplit, kByteLevel } kind;
    std::shared_ptr<Regex> regex;   // kSplit, and kByteLevel with use_regex
    bool remove = false;            // Split behavior "Removed": drop the matches
    bool add_prefix_space = false;  // ByteLevel
  };
  static Status add_steps(const nlohmann::json& j, std::vector<Step>& steps);
  std::vector<Step> steps_;
  ByteLevelAlphabet alphabet_;
};

}  // namespace musacoder::tokenizer
