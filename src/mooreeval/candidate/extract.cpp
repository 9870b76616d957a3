#include "mooreeval/candidate/extract.h"

#include <regex>
#include <vector>

#include "core/text.h"

namespace musacoder::candidate {
namespace {

bool is_blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

bool defines_model_new(const std::string& code) {
  static const std::regex re(R"((^|\n)\s*class\s+ModelNew\s*[(:])");
  return std::regex_search(code, re);
}

// Bodies of ``` fenced blocks, in order. An unterminated last fence runs to the end
// (responses cut off by a token limit).
std::vector<std::string> fenced_blocks(std::string_view text) {
  std::vector<std::string> blocks;
  std::size_t pos = 0;
  while (true) {
    std::size_t open = text.find("```", pos);
    if (open == std::string_view::npos) break;
    std::size_t body = text.find('\n', open);
    if (body == std::string_view::npos) break;
    ++body;
    std::size_t close = text.find("\n```", body - 1);
    if (close == std::string_view::npos) {
      blocks.emplace_back(text.substr(body));
      break;
    }
    blocks.emplace_back(text.substr(body, close + 1 - body));
    pos = close + 4;
  }
  return blocks;
}

}  // namespace

Result<Candidate> extract_candidate(std::string_view text, const ExtractOptions& options) {
  if (text.size() > options.max_bytes)
    return invalid_argument("the submission is " + std::to_string(text.size()) +
                            " bytes, over the limit of " + std::to_string(options.max_bytes));
  if (is_blank(text)) return invalid_argument("the submission is empty");
  if (!is_valid_utf8(text)) return invalid_argument("the submission is not valid UTF-8");
  if (text.find('\0') != std::string_view::npos) return invalid_argument("the submission contains NUL bytes");

  Candidate c;
  auto blocks = fenced_blocks(text);
  // The last block that defines ModelNew: responses often show a draft before the answer.
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    if (defines_model_new(*it)) {
      c.source = *it;
      c.from_fence = true;
      break;
    }
  }
  if (!c.from_fence) {
    if (!defines_model_new(std::string(text)))
      return invalid_argument(blocks.empty() ? "no `class ModelNew` in the submission"
                                             : "no code block in the response defines `class ModelNew`");
    c.source = std::string(text);
  }
  c.source_sha256 = sha256_hex(c.source);
  return c;
}

}  // namespace musacoder::candidate
