// Incremental text for a stream of generated tokens, and stop strings checked on it.
//
// IncrementalDetokenizer: byte-level BPE decodes token by token, except that one character's UTF-8 bytes
// may be split over several tokens; the decoder then yields U+FFFD. Tokens are held until their text no
// longer ends in U+FFFD (at most kMaxPending tokens: a genuinely invalid byte sequence is then emitted).
// Special tokens (eos, chat markers) produce no text.
//
// StopChecker: text is appended piece by piece; a stop string is found wherever it lies, also across
// pieces (tokens). Text that could still be the start of a stop string is held back, so a stream never
// shows part of a stop string; the final text ends right before the first match.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace musacoder::engine {

class IncrementalDetokenizer {
 public:
  static constexpr std::size_t kMaxPending = 6;
  explicit IncrementalDetokenizer(const tokenizer::Tokenizer* tok) : tok_(tok) {}
  // The new text once `token` is appended (maybe empty while bytes of a character are outstanding).
  std::string push(int32_t token);
  std::string flush();  // whatever is pending, at the end

 private:
  const tokenizer::Tokenizer* tok_;
  std::vector<int32_t> pending_;
};

class StopChecker {
 public:
  explicit StopChecker(std::vector<std::string> stops);
  struct Piece {
    std::string emit;     // text that is final and may be shown now
    bool stopped = false;
    std::string matched;  // the stop string that ended the text
  };
  Piece append(std::string_view text);
  std::string flush();  // the held-back tail, when generation ends without a match
  const std::string& text() const { return text_; }  // all text so far (ends before a match once stopped)

 private:
  std::vector<std::string> stops_;
  std::size_t longest_ = 0;
  std::string text_;
  std::size_t emitted_ = 0;
  bool stopped_ = false;
};

}  // namespace musacoder::engine
