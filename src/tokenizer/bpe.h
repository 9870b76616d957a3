// Byte-level BPE model: vocab (token -> id), merges with ranks, and the merge loop of the tokenizers
// library (lowest rank first, leftmost among equals; a heap over a linked list of symbols, O(n log n)).
// Thread-safety: immutable after construction; encode() is const and safe to call concurrently.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"

namespace musacoder::tokenizer {

// True for the <0xXX> tokens (two upper-case hex digits) of byte fallback.
bool is_byte_token(std::string_view token);

class BpeModel {
 public:
  // From tokenizer.json's "model" object (type "BPE"; merges as "a b" strings or [a, b] pairs).
  // Rejects dropout, continuing_subword_prefix / end_of_word_suffix (not used by these byte-level families),
  // byte_fallback over a vocab with <0xXX> byte tokens (without them it changes nothing) and merges whose
  // parts or result are not in the vocab.
  static Result<BpeModel> from_json(const nlohmann::json& model);

  // Token ids for one pre-token, already mapped to the byte-level alphabet. kInvalidArgument when a
  // character is not in the vocab and there is no unk token.
  Status encode(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // nullptr for ids outside the model vocab.
  const std::string* id_to_token(int32_t id) const;
  std::size_t size() const { return id_to_token_.size(); }

 private:
  struct PairHash {
    std::size_t operator()(uint64_t v) const { return std::hash<uint64_t>()(v * 0x9E3779B97F4A7C15ull); }
  };
  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;  // indexed by id; "" for gaps
  // (left id << 32 | right id) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>, PairHash> merges_;
  std::optional<int32_t> unk_;
  bool ignore_merges_ = false;
};

}  // namespace musacoder::tokenizer
