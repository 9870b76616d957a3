#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "core/files.h"
#include "core/text.h"

namespace musacoder::tokenizer {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// transformers' GGUF converter writes Sequence[ByteFallback, Fuse, Replace("▁", " "), ByteLevel] for
// byte-level vocabularies; it decodes as ByteLevel does wherever every token is spelt in the byte alphabet
// (Fuse then changes nothing, no token holds "▁") and none is a <0xXX> byte token (checked by
// only_byte_level_tokens).
bool is_converter_byte_level_sequence(const nlohmann::json& dec) {
  if (dec.value("type", std::string()) != "Sequence" || !dec.contains("decoders")) return false;
  const auto& d = dec["decoders"];
  if (!d.is_array() || d.size() != 4) return false;
  auto type = [&](std::size_t i) {
    return d[i].is_object() ? d[i].value("type", std::string()) : std::string();
  };
  return type(0) == "ByteFallback" && type(1) == "Fuse" && type(2) == "Replace" && type(3) == "ByteLevel" &&
         d[2].value("pattern", nlohmann::json()) == nlohmann::json{{"String", "\xE2\x96\x81"}} &&
         d[2].value("content", std::string()) == " ";
}

}  // namespace

Status Tokenizer::only_byte_level_tokens() const {
  auto refuse = [](const std::string& tok, const char* why) {
    return invalid_argument("tokenizer.json: decoder Sequence[ByteFallback, Fuse, Replace, ByteLevel] is "
                            "supported where it equals ByteLevel, and token '" + tok + "' " + why);
  };
  auto check = [&](const std::string& tok) -> Status {
    if (is_byte_token(tok)) return refuse(tok, "is a <0xXX> byte token");
    for (std::size_t k = 0; k < tok.size();) {
      if (alphabet_.byte_of(next_code_point(tok, k)) < 0) return refuse(tok, "is not spelt in the byte-level alphabet");
    }
    return {};
  };
  for (int32_t id = 0; id < static_cast<int32_t>(bpe_.size()); ++id) {
    if (const std::string* tok = bpe_.id_to_token(id)) MC_RETURN_IF_ERROR(check(*tok));
  }
  for (const auto& a : added_) MC_RETURN_IF_ERROR(check(a.content));
  return {};
}

Result<Tokenizer> Tokenizer::load(const std::filesystem::path& path, const TokenizerOptions& options) {
  std::filesystem::path file = std::filesystem::is_directory(path) ? path / "tokenizer.json" : path;
  auto text = read_file(file, options.max_file_bytes);
  if (!text.ok()) return text.status();
  auto t = from_json_text(*text, options);
  if (!t.ok()) return Status(t.status().code(), file.string() + ": " + t.status().message());
  return t;
}

Result<Tokenizer> Tokenizer::from_json_text(std::string_view json_text, const TokenizerOptions& options) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("tokenizer.json: not a JSON object");
  Tokenizer t;
  t.options_ = options;
  bool converter_sequence = false;
  try {
    auto bpe = BpeModel::from_json(j.contains("model") ? j["model"] : nlohmann::json());
    if (!bpe.ok()) return bpe.status();
    t.bpe_ = std::move(*bpe);
    auto norm = Normalizer::from_json(j.contains("normalizer") ? j["normalizer"] : nlohmann::json());
    if (!norm.ok()) return norm.status();
    t.normalizer_ = *norm;
    auto pre = PreTokenizer::from_json(j.contains("pre_tokenizer") ? j["pre_tokenizer"] : nlohmann::json());
    if (!pre.ok()) return pre.status();
    t.pre_tokenizer_ = std::move(*pre);
    const auto& dec = j.contains("decoder") ? j["decoder"] : nlohmann::json();
    converter_sequence = is_converter_byte_level_sequence(dec);
    if (!dec.is_null() && dec.value("type", std::string()) != "ByteLevel" && !converter_sequence) {
      return invalid_argument("tokenizer.json: decoder " + dec.value("type", std::string("?")) +
                              " is not supported (ByteLevel, or Sequence[ByteFallback, Fuse, Replace(\"▁\", "
                              "\" \"), ByteLevel])");
    }
    t.byte_level_decoder_ = !dec.is_null();
    t.vocab_size_ = static_cast<int32_t>(t.bpe_.size());
    t.added_by_first_byte_.assign(256, {});
    for (const auto& a : j.value("added_tokens", nlohmann::json::array())) {
      AddedToken tok;
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string() || a["content"].get<std::string>().empty()) {
        return invalid_argument("tokenizer.json: added token " + a.dump() +
                                " needs an id and non-empty content");
      }
      tok.id = a["id"].get<int32_t>();
      tok.content = a["content"].get<std::string>();
      tok.special = a.value("special", false);
      tok.normalized = a.value("normalized", !tok.special);
      tok.lstrip = a.value("lstrip", false);
      tok.rstrip = a.value("rstrip", false);
      tok.single_word = a.value("single_word", false);
      if (tok.single_word) {
        return invalid_argument("tokenizer.json: added token '" + tok.content +
                                "' uses single_word (not supported)");
      }
      if (tok.id < 0)
        return invalid_argument("tokenizer.json: added token '" + tok.content + "' has a negative id");
      t.vocab_size_ = std::max(t.vocab_size_, tok.id + 1);
      t.added_.push_back(std::move(tok));
    }
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(std::string("tokenizer.json: ") + e.what());
  }
  if (converter_sequence) MC_RETURN_IF_ERROR(t.only_byte_level_tokens());
  for (std::size_t i = 0; i < t.added_.size(); ++i) {
    t.added_by_first_byte_[static_cast<unsigned char>(t.added_[i].content[0])].push_back(i);
  }
  for (auto& bucket : t.added_by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(), [&](std::size_t a, std::size_t b) {
      return t.added_[a].content.size() > t.added_[b].content.size();
    });
  }
  return t;
}

template <typename Plain>
Status Tokenizer::split_added(std::string_view text, bool normalized, std::vector<int32_t>& out,
                              Plain&& plain) const {
  std::size_t seg_begin = 0;  // start of the text not yet handed out
  std::size_t i = 0;
  while (i < text.size()) {
    const AddedToken* hit = nullptr;
    for (std::size_t k : added_by_first_byte_[static_cast<unsigned char>(text[i])]) {
      const AddedToken& a = added_[k];
      if (a.normalized != normalized || (a.special && options_.split_special_tokens)) continue;
      if (text.compare(i, a.content.size(), a.content) == 0) {
        hit = &a;  // buckets are longest first: leftmost-longest
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    std::size_t b = i, e = i + hit->content.size();
    if (hit->lstrip) {
      while (b > seg_begin && is_space(text[b - 1])) --b;
    }
    if (hit->rstrip) {
      while (e < text.size() && is_space(text[e])) ++e;
    }
    if (b > seg_begin) MC_RETURN_IF_ERROR(plain(text.substr(seg_begin, b - seg_begin)));
    out.push_back(hit->id);
    seg_begin = i = e;
  }
  if (seg_begin < text.size()) MC_RETURN_IF_ERROR(plain(text.substr(seg_begin)));
  return {};
}

Status Tokenizer::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  auto pieces = pre_tokenizer_.split(text);
  if (!pieces.ok()) return pieces.status();
  for (const auto& p : *pieces) MC_RETURN_IF_ERROR(bpe_.encode(p, out));
  return {};
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text) const {
  if (!is_valid_utf8(text)) return invalid_argument("tokenizer: input is not valid UTF-8");
  std::vector<int32_t> out;
  Status st = split_added(text, /*normalized=*/false, out, [&](std::string_view raw) -> Status {
    auto norm = normalizer_.normalize(raw);
    if (!norm.ok()) return norm.status();
    return split_added(*norm, /*normalized=*/true, out,
                       [&](std::string_view seg) -> Status { return encode_plain(seg, out); });
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::string> Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::string bytes;
  for (int32_t id : ids) {
    const std::string* text = nullptr;
    bool special = false;
    for (const auto& a : added_) {
      if (a.id == id) {
        text = &a.content;
        special = a.special;
        break;
      }
    }
    if (text == nullptr) text = bpe_.id_to_token(id);
    if (text == nullptr)
      return invalid_argument("tokenizer: id " + std::to_string(id) + " is not in the vocabulary");
    if (special && skip_special_tokens) continue;
    if (!byte_level_decoder_) {
      bytes += *text;
      continue;
    }
    // Per token, as the tokenizers library's ByteLevel decoder: map every code point back to its byte, or
    // keep the token's own UTF-8 when any code point is outside the byte alphabet.
    std::string mapped;
    bool all_mapped = true;
    for (std::size_t k = 0; k < text->size();) {
      int b = alphabet_.byte_of(next_code_point(*text, k));
      if (b < 0) {
        all_mapped = false;
        break;
      }
      mapped.push_back(static_cast<char>(b));
    }
    bytes += all_mapped ? mapped : *text;
  }
  return utf8_lossy(bytes);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  for (const auto& a : added_) {
    if (a.content == token) return a.id;
  }
  return bpe_.token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  for (const auto& a : added_) {
    if (a.id == id) return a.content;
  }
  const std::string* t = bpe_.id_to_token(id);
  if (t == nullptr) return std::nullopt;
  return *t;
}

}  // namespace musacoder::tokenizer
