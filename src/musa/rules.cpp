// The rule tables: torchada's (plain text, in its application order) and MusaCoder's additions
// (regexes), parsed once from the compiled-in JSON; and the inverses kToCuda applies.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include <cctype>
#include "rules_internal.h"

namespace musacoder::musa {

using nlohmann::json;

const char* direction_name(Direction d) { return d == Direction::kToMusa ? "musa" : "cuda"; }

Result<Direction> parse_direction(const std::string& name) {
  if (name == "musa") return Direction::kToMusa;
  if (name == "cuda") return Direction::kToCuda;
  return invalid_argument("unknown port direction '" + name + "' (expected musa or cuda)");
}

namespace {

// A MUSA-side text that only MUSA code contains. An inverse is kept only for such texts: mapping back
// a text CUDA code may contain itself (`__half`, `((void)0)`, `<c10/util/Half.h>`) would rewrite CUDA.
bool looks_musa(const std::string& s) {
  static const std::regex marker(
      R"(musa|MUSA|Musa|__mt_|__MT_|\bmu[A-Z]|\bMU[A-Za-z_]|mccl|MCCL|mutlass|MUTLASS|mtjpeg|MTJPEG|)"
      R"(\bmu(blas|rand|fft|sparse|solver|dnn)|\bMU(BLAS|RAND|FFT|SPARSE|SOLVER|DNN)|PrivateUse1|privateuseone|)"
      R"(if\(0\) asm|\.muh?\b)");
  return std::regex_search(s, marker);
}

RuleTable load_table() {
  RuleTable t;
  const json torchada = json::parse(detail::kTorchadaRulesJson);
  t.torchada_version = torchada.at("torchada_version").get<std::string>();
  std::map<std::string, std::string> first_key_of;  // MUSA text -> the first CUDA text mapping to it
  for (const auto& r : torchada.at("rules")) {
    Rule rule;
    rule.origin = "torchada";
    rule.cuda = rule.name = r.at(0).get<std::string>();
    rule.musa = r.at(1).get<std::string>();
    first_key_of.emplace(rule.musa, rule.cuda);
    t.rules.push_back(std::move(rule));
  }
  for (Rule& r : t.rules) r.reversible = r.cuda != r.musa && first_key_of[r.musa] == r.cuda && looks_musa(r.musa);
  const json additions = json::parse(detail::kAdditionsJson);
  for (const auto& a : additions.at("rules")) {
    Rule rule;
    rule.origin = "musacoder";
    rule.regex = true;
    rule.name = a.at("name").get<std::string>();
    rule.python_only = a.at("scope").get<std::string>() == "python";
    rule.cuda = a.at("cuda").get<std::string>();
    rule.musa = a.at("musa").get<std::string>();
    rule.musa_text = a.at("musa_text").get<std::string>();
    rule.cuda_text = a.at("cuda_text").get<std::string>();
    t.rules.push_back(std::move(rule));
  }
  return t;
}

std::vector<detail::CompiledRule> compile(Direction d) {
  const RuleTable& t = rule_table();
  std::vector<detail::CompiledRule> plain, regex;
  for (const Rule& r : t.rules) {
    if (d == Direction::kToCuda && !r.reversible) continue;
    if (!r.regex && r.cuda == r.musa) continue;  // torchada skips identity rules
    detail::CompiledRule c;
    c.rule = &r;
    c.regex = r.regex;
    if (r.regex) {
      c.pattern = std::regex(d == Direction::kToMusa ? r.cuda : r.musa, std::regex::ECMAScript);
      c.replacement = d == Direction::kToMusa ? r.musa_text : r.cuda_text;
      regex.push_back(std::move(c));
    } else {
      c.from = d == Direction::kToMusa ? r.cuda : r.musa;
      c.to = d == Direction::kToMusa ? r.musa : r.cuda;
      plain.push_back(std::move(c));
    }
  }
  if (d == Direction::kToMusa) {
    plain.insert(plain.end(), std::make_move_iterator(regex.begin()), std::make_move_iterator(regex.end()));
    return plain;
  }
  std::stable_sort(plain.begin(), plain.end(),
                   [](const auto& a, const auto& b) { return a.from.size() > b.from.size(); });
  std::reverse(regex.begin(), regex.end());
  regex.insert(regex.end(), std::make_move_iterator(plain.begin()), std::make_move_iterator(plain.end()));
  return regex;
}

}  // namespace

const RuleTable& rule_table() {
  static const RuleTable table = load_table();
  return table;
}

namespace detail {

const std::vector<CompiledRule>& compiled_rules(Direction d) {
  static const std::vector<CompiledRule> to_musa = compile(Direction::kToMusa);
  static const std::vector<CompiledRule> to_cuda = compile(Direction::kToCuda);
  return d == Direction::kToMusa ? to_musa : to_cuda;
}

int line_of(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace detail
}  // namespace musacoder::musa
