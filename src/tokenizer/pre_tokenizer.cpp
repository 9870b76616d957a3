#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pre_tokenizer.h"

#include <pcre2.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

namespace musacoder::tokenizer {

// GPT-2's pattern, used by ByteLevel when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class Regex {
 public:
  static Result<std::shared_ptr<Regex>> compile(const std::string& pattern, bool literal) {
    int err = 0;
    PCRE2_SIZE offset = 0;
    uint32_t flags = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0);
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), flags,
                                     &err, &offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return invalid_argument("tokenizer.json: pre-tokenizer regex does not compile at offset " +
                              std::to_string(offset) + ": " + reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter when JIT is unavailable
    auto r = std::shared_ptr<Regex>(new Regex());
    r->code_ = code;
    return r;
  }
  ~Regex() { pcre2_code_free(code_); }

  // Calls on_match(begin, end) for every non-overlapping match, left to right. `text` is valid UTF-8
  // (checked by the caller), so matching can skip PCRE2's own UTF check.
  template <typename F>
  Status for_each_match(std::string_view text, F&& on_match) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    if (md == nullptr) return internal_error("pcre2: out of memory");
    std::size_t pos = 0;
    Status status;
    while (pos <= text.size()) {
      int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos,
                           PCRE2_NO_UTF_CHECK, md, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        status = internal_error("pcre2_match failed with code " + std::to_string(rc));
        break;
      }
      PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      std::size_t b = ov[0], e = ov[1];
      if (e == b) {  // empty match: step one code point so the loop terminates
        if (b >= text.size()) break;
        std::size_t next = b;
        next_code_point(text, next);
        pos = next;
        continue;
      }
      on_match(b, e);
      pos = e;
    }
    pcre2_match_data_free(md);
    return status;
  }

 private:
  Regex() = default;
  pcre2_code* code_ = nullptr;
};

Result<Normalizer> Normalizer::from_json(const nlohmann::json& j) {
  Normalizer n;
  if (j.is_null()) return n;
  std::string type = j.value("type", std::string());
  if (type == "NFC") {
    n.nfc_ = true;
    return n;
  }
  if (type == "Sequence" && j.contains("normalizers") && j["normalizers"].is_array()) {
    for (const auto& sub : j["normalizers"]) {
      auto s = from_json(sub);
      if (!s.ok()) return s.status();
      n.nfc_ = n.nfc_ || s->nfc_;
    }
    return n;
  }
  return invalid_argument("tokenizer.json: normalizer '" + type + "' is not supported (null, NFC, Sequence)");
}

Result<std::string> Normalizer::normalize(std::string_view text) const {
  if (!nfc_) return std::string(text);
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(err);
  if (U_FAILURE(err)) return internal_error(std::string("ICU: no NFC normalizer: ") + u_errorName(err));
  icu::UnicodeString src =
      icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  icu::UnicodeString dst = nfc->normalize(src, err);
  if (U_FAILURE(err)) return internal_error(std::string("ICU NFC failed: ") + u_errorName(err));
  std::string out;
  dst.toUTF8String(out);
  return out;
}

PreTokenizer::PreTokenizer() = default;
PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

Status PreTokenizer::add_steps(const nlohmann::json& j, std::vector<Step>& steps) {
  std::string type = j.value("type", std::string());
  if (type == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array()) {
      return invalid_argument("tokenizer.json: Sequence pre_tokenizer needs a pretokenizers list");
    }
    for (const auto& sub : j["pretokenizers"]) MC_RETURN_IF_ERROR(add_steps(sub, steps));
    return {};
  }
  if (type == "Split") {
    if (j.value("invert", false))
      return invalid_argument("tokenizer.json: Split with invert=true is not supported");
    std::string behavior = j.value("behavior", std::string());
    if (behavior != "Isolated" && behavior != "Removed") {
      return invalid_argument("tokenizer.json: Split behavior '" + behavior +
                              "' is not supported (Isolated, Removed)");
    }
    const auto& p = j.contains("pattern") ? j["pattern"] : nlohmann::json();
    Result<std::shared_ptr<Regex>> re =
        invalid_argument("tokenizer.json: Split needs pattern.Regex or pattern.String");
    if (p.is_object() && p.contains("Regex") && p["Regex"].is_string()) {
      re = Regex::compile(p["Regex"].get<std::string>(), false);
    } else if (p.is_object() && p.contains("String") && p["String"].is_string()) {
      re = Regex::compile(p["String"].get<std::string>(), true);
    }
    if (!re.ok()) return re.status();
    steps.push_back({Step::kSplit, *re, behavior == "Removed", false});
    return {};
  }
  if (type == "ByteLevel") {
    Step s{Step::kByteLevel, nullptr, false, j.value("add_prefix_space", false)};
    if (j.value("use_regex", true)) {
      auto re = Regex::compile(kGpt2Pattern, false);
      if (!re.ok()) return re.status();
      s.regex = *re;
    }
    steps.push_back(std::move(s));
    return {};
  }
  return invalid_argument("tokenizer.json: pre_tokenizer '" + type +
                          "' is not supported (Split, ByteLevel, Sequence)");
}

Result<PreTokenizer> PreTokenizer::from_json(const nlohmann::json& j) {
  PreTokenizer p;
  if (j.is_null()) return p;
  MC_RETURN_IF_ERROR(add_steps(j, p.steps_));
  return p;
}

Result<std::vector<std::string>> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string> pieces{std::string(text)};
  for (const Step& step : steps_) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      if (step.kind == Step::kByteLevel && step.add_prefix_space && (piece.empty() || piece[0] != ' ')) {
        piece.insert(piece.begin(), ' ');  // per split, as the tokenizers library does
      }
      if (!step.regex) {
        next.push_back(std::move(piece));
        continue;
      }
      // Isolated: matches and the gaps between them are pieces of their own; Removed drops the matches.
      std::size_t last = 0;
      MC_RETURN_IF_ERROR(step.regex->for_each_match(piece, [&](std::size_t b, std::size_t e) {
        if (b > last) next.push_back(piece.substr(last, b - last));
        if (!step.remove) next.push_back(piece.substr(b, e - b));
        last = e;
      }));
      if (last < piece.size()) next.push_back(piece.substr(last));
    }
    if (step.kind == Step::kByteLevel) {
      for (auto& p : next) p = alphabet_.encode(p);
    }
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace musacoder::tokenizer
