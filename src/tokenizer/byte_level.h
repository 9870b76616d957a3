// GPT-2's byte-level alphabet: every byte 0..255 maps to one printable Unicode code point, so BPE works on
// text without ever seeing raw control bytes or broken UTF-8.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace musacoder::tokenizer {

class ByteLevelAlphabet {
 public:
  ByteLevelAlphabet();
  // Each byte of `bytes` as its code point, UTF-8 encoded.
  std::string encode(std::string_view bytes) const;
  // The byte a code point stands for; -1 when it is not in the alphabet.
  int byte_of(char32_t cp) const;
  // The UTF-8 text of byte b's code point.
  const std::string& char_of(uint8_t b) const { return utf8_[b]; }

 private:
  std::array<std::string, 256> utf8_;
  std::unordered_map<char32_t, uint8_t> bytes_;
};

// Appends the UTF-8 encoding of `cp`.
void append_utf8(std::string& out, char32_t cp);
// Decodes the code point at s[i] (s must be valid UTF-8) and advances i.
char32_t next_code_point(std::string_view s, std::size_t& i);
// Makes `bytes` valid UTF-8 by replacing each maximal invalid subsequence with U+FFFD, as Rust's
// String::from_utf8_lossy (and so the tokenizers library) does.
std::string utf8_lossy(std::string_view bytes);

}  // namespace musacoder::tokenizer
