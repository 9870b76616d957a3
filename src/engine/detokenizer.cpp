#include "engine/detokenizer.h"

#include <algorithm>

namespace musacoder::engine {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace

std::string IncrementalDetokenizer::push(int32_t token) {
  if (tok_ == nullptr) return "";
  pending_.push_back(token);
  auto text = tok_->decode(pending_, /*skip_special_tokens=*/true);
  if (!text.ok()) {  // an id outside the tokenizer's vocabulary (the model's vocab may be padded)
    pending_.clear();
    return "";
  }
  if (text->ends_with(kReplacement) && pending_.size() < kMaxPending) return "";
  pending_.clear();
  return *text;
}

std::string IncrementalDetokenizer::flush() {
  if (tok_ == nullptr || pending_.empty()) return "";
  auto text = tok_->decode(pending_, true);
  pending_.clear();
  return text.ok() ? *text : "";
}

StopChecker::StopChecker(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
  for (const auto& s : stops_) longest_ = std::max(longest_, s.size());
}

StopChecker::Piece StopChecker::append(std::string_view piece) {
  Piece out;
  if (stopped_ || piece.empty()) return out;
  // A match ending in the new piece starts at most longest_ - 1 bytes before it.
  const std::size_t from = text_.size() >= longest_ ? text_.size() - longest_ + 1 : 0;
  text_.append(piece);
  std::size_t first = std::string::npos;
  for (const auto& s : stops_) {
    std::size_t at = text_.find(s, from);
    if (at != std::string::npos && at < first) first = at, out.matched = s;
  }
  std::size_t safe = text_.size();
  if (first != std::string::npos) {
    text_.resize(first);
    safe = first;
    stopped_ = out.stopped = true;
  } else if (longest_ > 0) {
    safe = text_.size() >= longest_ - 1 ? text_.size() - (longest_ - 1) : 0;
    // never cut a UTF-8 character: back up to the start of the character at `safe`
    while (safe > emitted_ && safe < text_.size() && (static_cast<unsigned char>(text_[safe]) & 0xC0) == 0x80)
      --safe;
  }
  if (safe > emitted_) {
    out.emit = text_.substr(emitted_, safe - emitted_);
    emitted_ = safe;
  }
  return out;
}

std::string StopChecker::flush() {
  std::string rest = text_.substr(std::min(emitted_, text_.size()));
  emitted_ = text_.size();
  return rest;
}

}  // namespace musacoder::engine
