#include "tokenizer/bpe.h"

#include <queue>

#include "tokenizer/byte_level.h"

namespace musacoder::tokenizer {
namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

}  // namespace

bool is_byte_token(std::string_view token) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return token.size() == 6 && token.substr(0, 3) == "<0x" && hex(token[3]) && hex(token[4]) &&
         token[5] == '>';
}

Result<BpeModel> BpeModel::from_json(const nlohmann::json& m) {
  if (!m.is_object() || m.value("type", std::string()) != "BPE") {
    return invalid_argument("tokenizer.json: model.type must be \"BPE\" (got " +
                            (m.is_object() && m.contains("type") ? m["type"].dump() : std::string("none")) +
                            ")");
  }
  if (m.contains("dropout") && !m["dropout"].is_null()) {
    return invalid_argument("tokenizer.json: BPE dropout is not supported");
  }
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (m.contains(k) && m[k].is_string() && !m[k].get<std::string>().empty()) {
      return invalid_argument(std::string("tokenizer.json: BPE ") + k + " is not supported");
    }
  }
  if (!m.contains("vocab") || !m["vocab"].is_object())
    return invalid_argument("tokenizer.json: model.vocab missing");
  BpeModel bpe;
  bpe.ignore_merges_ = m.value("ignore_merges", false);
  int32_t max_id = -1;
  for (auto it = m["vocab"].begin(); it != m["vocab"].end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > (1 << 30)) {
      return invalid_argument("tokenizer.json: vocab id of '" + it.key() +
                              "' must be a small non-negative integer");
    }
    auto id = static_cast<int32_t>(it->get<int64_t>());
    bpe.vocab_[it.key()] = id;
    max_id = std::max(max_id, id);
  }
  // byte_fallback spells a missing character as its bytes' <0xXX> tokens, and with none of those in the vocab
  // falls back to unk_token as a BPE without it does (transformers' GGUF converter sets it on byte-level
  // vocabularies): accepted exactly when it cannot change an id.
  if (m.value("byte_fallback", false)) {
    for (const auto& [tok, id] : bpe.vocab_) {
      if (is_byte_token(tok))
        return invalid_argument("tokenizer.json: BPE byte_fallback with byte tokens (" + tok +
                                ") is not supported");
    }
  }
  bpe.id_to_token_.assign(static_cast<std::size_t>(max_id + 1), std::string());
  for (const auto& [tok, id] : bpe.vocab_) bpe.id_to_token_[id] = tok;

  if (m.contains("merges") && !m["merges"].is_array())
    return invalid_argument("tokenizer.json: merges not a list");
  int32_t rank = 0;
  for (const auto& merge : m.value("merges", nlohmann::json::array())) {
    std::string a, b;
    if (merge.is_string()) {
      const std::string s = merge.get<std::string>();
      auto sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size()) {
        return invalid_argument("tokenizer.json: merge \"" + s + "\" is not \"a b\"");
      }
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      a = merge[0].get<std::string>();
      b = merge[1].get<std::string>();
    } else {
      return invalid_argument("tokenizer.json: merge " + merge.dump() + " is neither \"a b\" nor [a, b]");
    }
    auto ia = bpe.vocab_.find(a), ib = bpe.vocab_.find(b), ic = bpe.vocab_.find(a + b);
    if (ia == bpe.vocab_.end() || ib == bpe.vocab_.end() || ic == bpe.vocab_.end()) {
      return invalid_argument("tokenizer.json: merge (" + a + ", " + b +
                              ") uses tokens missing from the vocab");
    }
    // A repeated pair keeps its first (lowest) rank, as the tokenizers library does.
    bpe.merges_.emplace(pair_key(ia->second, ib->second), std::make_pair(rank, ic->second));
    ++rank;
  }
  if (m.contains("unk_token") && m["unk_token"].is_string()) {
    auto it = bpe.vocab_.find(m["unk_token"].get<std::string>());
    if (it == bpe.vocab_.end()) return invalid_argument("tokenizer.json: unk_token is not in the vocab");
    bpe.unk_ = it->second;
  }
  return bpe;
}

Status BpeModel::encode(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return {};
  if (ignore_merges_) {
    auto it = vocab_.find(std::string(word));
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return {};
    }
  }
  // Symbols as a doubly linked list over a vector; a removed symbol has id -1.
  struct Symbol {
    int32_t id;
    int prev, next;
  };
  std::vector<Symbol> sym;
  for (std::size_t i = 0; i < word.size();) {
    std::size_t start = i;
    next_code_point(word, i);
    auto it = vocab_.find(std::string(word.substr(start, i - start)));
    if (it == vocab_.end()) {
      if (!unk_) {
        return invalid_argument("tokenizer: character '" + std::string(word.substr(start, i - start)) +
                                "' is not in the vocab and there is no unk_token");
      }
      sym.push_back({*unk_, static_cast<int>(sym.size()) - 1, static_cast<int>(sym.size()) + 1});
    } else {
      sym.push_back({it->second, static_cast<int>(sym.size()) - 1, static_cast<int>(sym.size()) + 1});
    }
  }
  sym.back().next = -1;
  // (rank, position, right id at push time): smallest rank first, then leftmost.
  using Item = std::tuple<int32_t, int, int32_t, int32_t>;  // rank, pos, merged id, right id
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  auto push = [&](int pos) {
    if (pos < 0 || sym[pos].next < 0) return;
    auto it = merges_.find(pair_key(sym[pos].id, sym[sym[pos].next].id));
    if (it != merges_.end()) heap.emplace(it->second.first, pos, it->second.second, sym[sym[pos].next].id);
  };
  for (int i = 0; i + 1 < static_cast<int>(sym.size()); ++i) push(i);
  while (!heap.empty()) {
    auto [rank, pos, merged_at_push, right_id] = heap.top();
    (void)merged_at_push;
    heap.pop();
    Symbol& left = sym[pos];
    // Stale entry: this symbol was merged away, or its right neighbour changed since the push.
    if (left.id < 0 || left.next < 0 || sym[left.next].id != right_id) continue;
    auto it = merges_.find(pair_key(left.id, right_id));
    if (it == merges_.end() || it->second.first != rank) continue;
    int r = left.next;
    left.id = it->second.second;
    left.next = sym[r].next;
    if (left.next >= 0) sym[left.next].prev = pos;
    sym[r].id = -1;
    push(left.prev);
    push(pos);
  }
  for (int i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
  return {};
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= id_to_token_.size() || id_to_token_[id].empty())
    return nullptr;
  return &id_to_token_[id];
}

}  // namespace musacoder::tokenizer
