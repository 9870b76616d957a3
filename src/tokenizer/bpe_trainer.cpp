#include "tokenizer/bpe_trainer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/check.h"
#include "core/text.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pre_tokenizer.h"

namespace musacoder::tokenizer {
namespace {

using ordered_json = nlohmann::ordered_json;

// Qwen2's pre-tokenizer regex (as in its tokenizer.json).
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Everything of tokenizer.json except "model", with the fields and order the tokenizers library writes.
ordered_json pipeline_json(const BpeTrainerOptions& o) {
  ordered_json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = ordered_json::array();
  for (std::size_t i = 0; i < o.special_tokens.size(); ++i) {
    j["added_tokens"].push_back({{"id", i},
                                 {"content", o.special_tokens[i]},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false},
                                 {"special", true}});
  }
  j["normalizer"] = {{"type", "NFC"}};
  ordered_json split = {{"type", "Split"},
                        {"pattern", {{"Regex", kQwen2Pattern}}},
                        {"behavior", "Isolated"},
                        {"invert", false}};
  ordered_json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}};
  j["post_processor"] = nullptr;
  j["decoder"] = {
      {"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  return j;
}

// The 256 byte symbols in code point order (UTF-8 byte order is code point order).
std::vector<std::string> byte_symbols() {
  ByteLevelAlphabet alphabet;
  std::vector<std::string> out;
  for (int b = 0; b < 256; ++b) out.push_back(alphabet.char_of(static_cast<uint8_t>(b)));
  std::sort(out.begin(), out.end());
  return out;
}

Status validate(const std::vector<std::string>& texts, const BpeTrainerOptions& o) {
  const auto& specials = o.special_tokens;
  if (o.vocab_size < 256 + static_cast<int64_t>(specials.size())) {
    return invalid_argument("bpe trainer: vocab_size " + std::to_string(o.vocab_size) + " is below 256 + " +
                            std::to_string(specials.size()) + " special tokens");
  }
  if (o.min_frequency < 0) return invalid_argument("bpe trainer: min_frequency must be >= 0");
  std::vector<std::string> seen = byte_symbols();
  for (const auto& s : specials) {
    if (s.empty() || !is_valid_utf8(s))
      return invalid_argument("bpe trainer: a special token is empty or not valid UTF-8");
    if (std::find(seen.begin(), seen.end(), s) != seen.end()) {
      return invalid_argument("bpe trainer: special token '" + s + "' is repeated or equals a byte symbol");
    }
    seen.push_back(s);
  }
  if (texts.empty()) return invalid_argument("bpe trainer: the corpus is empty");
  for (std::size_t i = 0; i < texts.size(); ++i) {
    if (!is_valid_utf8(texts[i]))
      return invalid_argument("bpe trainer: text " + std::to_string(i) + " is not valid UTF-8");
  }
  return {};
}

// Calls plain(segment) for the text between the special tokens (`specials` longest first: leftmost-longest
// matches, as Tokenizer::encode cuts them).
template <typename Plain>
Status for_each_segment(std::string_view text, const std::vector<std::string>& specials, Plain&& plain) {
  std::size_t begin = 0, i = 0;
  while (i < text.size()) {
    auto hit = std::find_if(specials.begin(), specials.end(),
                            [&](const std::string& s) { return text.compare(i, s.size(), s) == 0; });
    if (hit == specials.end()) {
      ++i;
      continue;
    }
    if (i > begin) MC_RETURN_IF_ERROR(plain(text.substr(begin, i - begin)));
    begin = i = i + hit->size();
  }
  if (begin < text.size()) MC_RETURN_IF_ERROR(plain(text.substr(begin)));
  return {};
}

// Pre-token (byte-level string) -> occurrences in the corpus, sorted by pre-token.
Result<std::vector<std::pair<std::string, int64_t>>> count_pre_tokens(const std::vector<std::string>& texts,
                                                                      const BpeTrainerOptions& o,
                                                                      const ordered_json& pipeline) {
  // Built from the emitted JSON: training and encoding share one pre-tokenization by construction.
  auto normalizer = Normalizer::from_json(nlohmann::json::parse(pipeline["normalizer"].dump()));
  if (!normalizer.ok()) return normalizer.status();
  auto pre = PreTokenizer::from_json(nlohmann::json::parse(pipeline["pre_tokenizer"].dump()));
  if (!pre.ok()) return pre.status();
  std::vector<std::string> cut = o.cut_special_tokens ? o.special_tokens : std::vector<std::string>{};
  std::stable_sort(cut.begin(), cut.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::unordered_map<std::string, int64_t> counts;
  for (const auto& text : texts) {
    MC_RETURN_IF_ERROR(for_each_segment(text, cut, [&](std::string_view segment) -> Status {
      auto normalized = normalizer->normalize(segment);
      if (!normalized.ok()) return normalized.status();
      auto pieces = pre->split(*normalized);
      if (!pieces.ok()) return pieces.status();
      for (auto& p : *pieces) ++counts[std::move(p)];
      return {};
    }));
  }
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  if (sorted.empty()) return invalid_argument("bpe trainer: the corpus has no text outside special tokens");
  return sorted;
}

// The merge loop over words of symbol ids (the tokenizers library's BpeTrainer algorithm): exact pair
// counts, a pair -> words index carried by heap entries, and lazy re-insertion of stale entries.
class MergeLoop {
 public:
  explicit MergeLoop(std::vector<std::string> vocab) : vocab_(std::move(vocab)) {
    for (std::size_t i = 0; i < vocab_.size(); ++i) ids_.emplace(vocab_[i], static_cast<int32_t>(i));
  }
  void add_word(std::vector<int32_t> symbols, int64_t count) {
    words_.push_back(std::move(symbols));
    counts_.push_back(count);
  }
  void run(int32_t vocab_size, int64_t min_frequency);

  const std::vector<std::string>& vocab() const { return vocab_; }
  const std::vector<std::pair<int32_t, int32_t>>& merges() const { return merges_; }
  std::optional<int32_t> id_of(const std::string& s) const {
    auto it = ids_.find(s);
    return it == ids_.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }

 private:
  struct Entry {
    int64_t count;
    uint64_t pair;
    std::vector<int32_t> words;  // where the pair occurs (some may no longer hold it)
    // Heap order: higher count first, then the smaller pair.
    bool operator<(const Entry& e) const { return count != e.count ? count < e.count : pair > e.pair; }
  };
  struct Change {
    uint64_t pair;
    int32_t word;
    int32_t delta;
  };
  static uint64_t pack(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b);
  }
  void count_pairs();
  void push(Entry e) {
    heap_.push_back(std::move(e));
    std::push_heap(heap_.begin(), heap_.end());
  }
  Entry pop() {
    std::pop_heap(heap_.begin(), heap_.end());
    Entry e = std::move(heap_.back());
    heap_.pop_back();
    return e;
  }
  int32_t token_for(uint64_t pair);
  void merge_word(int32_t w, uint64_t pair, int32_t id, std::vector<Change>& changes);
  void apply(std::vector<Change>& changes);

  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<std::vector<int32_t>> words_;
  std::vector<int64_t> counts_;
  std::unordered_map<uint64_t, int64_t> pair_counts_;
  std::vector<Entry> heap_;
  std::vector<std::pair<int32_t, int32_t>> merges_;
};

void MergeLoop::count_pairs() {
  std::vector<Change> changes;
  for (std::size_t w = 0; w < words_.size(); ++w) {
    const auto& s = words_[w];
    for (std::size_t i = 0; i + 1 < s.size(); ++i)
      changes.push_back({pack(s[i], s[i + 1]), static_cast<int32_t>(w), 1});
  }
  apply(changes);
}

// Adds the changes to the pair counts and pushes one heap entry per pair that gained occurrences.
void MergeLoop::apply(std::vector<Change>& changes) {
  for (const Change& c : changes) pair_counts_[c.pair] += c.delta * counts_[c.word];
  std::erase_if(changes, [](const Change& c) { return c.delta <= 0; });
  std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return a.pair != b.pair ? a.pair < b.pair : a.word < b.word;
  });
  for (std::size_t i = 0; i < changes.size();) {
    Entry e{pair_counts_[changes[i].pair], changes[i].pair, {}};
    for (; i < changes.size() && changes[i].pair == e.pair; ++i) {
      if (e.words.empty() || e.words.back() != changes[i].word) e.words.push_back(changes[i].word);
    }
    if (e.count > 0) push(std::move(e));
  }
}

// The id of the pair's concatenation; a new id unless another pair already made that string.
int32_t MergeLoop::token_for(uint64_t pair) {
  std::string token = vocab_[pair >> 32] + vocab_[pair & 0xFFFFFFFFu];
  auto [it, inserted] = ids_.emplace(token, static_cast<int32_t>(vocab_.size()));
  if (inserted) vocab_.push_back(std::move(token));
  return it->second;
}

// Replaces every non-overlapping occurrence (left to right) of the pair in word w by id, recording the
// pair-count changes of the neighbours (the merged pair itself is retired with its heap entry).
void MergeLoop::merge_word(int32_t w, uint64_t pair, int32_t id, std::vector<Change>& changes) {
  const auto a = static_cast<int32_t>(pair >> 32), b = static_cast<int32_t>(pair & 0xFFFFFFFFu);
  auto& s = words_[w];
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] != a || s[i + 1] != b) continue;
    if (i > 0) {
      changes.push_back({pack(s[i - 1], a), w, -1});
      changes.push_back({pack(s[i - 1], id), w, 1});
    }
    s[i] = id;
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    if (i + 1 < s.size()) {
      changes.push_back({pack(id, s[i + 1]), w, 1});
      changes.push_back({pack(b, s[i + 1]), w, -1});
    }
  }
}

void MergeLoop::run(int32_t vocab_size, int64_t min_frequency) {
  count_pairs();
  std::vector<Change> changes;
  while (static_cast<int64_t>(vocab_.size()) < vocab_size && !heap_.empty()) {
    Entry top = pop();
    int64_t current = pair_counts_[top.pair];
    if (top.count != current) {  // stale: counts only fall after an entry is pushed
      top.count = current;
      push(std::move(top));
      continue;
    }
    if (top.count < std::max<int64_t>(min_frequency, 1)) break;
    int32_t id = token_for(top.pair);
    merges_.emplace_back(static_cast<int32_t>(top.pair >> 32), static_cast<int32_t>(top.pair & 0xFFFFFFFFu));
    changes.clear();
    for (int32_t w : top.words) merge_word(w, top.pair, id, changes);
    apply(changes);
  }
}

ordered_json model_json(const MergeLoop& loop) {
  ordered_json vocab = ordered_json::object();
  for (std::size_t i = 0; i < loop.vocab().size(); ++i) vocab[loop.vocab()[i]] = i;
  ordered_json merges = ordered_json::array();
  for (const auto& [a, b] : loop.merges())
    merges.push_back(ordered_json::array({loop.vocab()[a], loop.vocab()[b]}));
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", false},
          {"vocab", std::move(vocab)},
          {"merges", std::move(merges)}};
}

}  // namespace

Result<std::string> train_bpe_tokenizer_json(const std::vector<std::string>& texts,
                                             const BpeTrainerOptions& o) {
  MC_RETURN_IF_ERROR(validate(texts, o));
  ordered_json j = pipeline_json(o);
  auto words = count_pre_tokens(texts, o, j);
  if (!words.ok()) return words.status();
  std::vector<std::string> initial = o.special_tokens;
  for (auto& s : byte_symbols()) initial.push_back(std::move(s));
  MergeLoop loop(std::move(initial));
  for (const auto& [word, count] : *words) {
    std::vector<int32_t> symbols;
    for (std::size_t i = 0; i < word.size();) {
      std::size_t begin = i;
      next_code_point(word, i);
      auto id = loop.id_of(word.substr(begin, i - begin));
      MC_CHECK(id.has_value());  // ByteLevel output holds byte symbols only
      symbols.push_back(*id);
    }
    loop.add_word(std::move(symbols), count);
  }
  loop.run(o.vocab_size, o.min_frequency);
  j["model"] = model_json(loop);
  return j.dump(2);
}

}  // namespace musacoder::tokenizer
