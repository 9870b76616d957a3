// response -> code: the last python block defining ModelNew after any </think>.
#include <regex>
#include <string>
#include <vector>

#include "prompts/prompts.h"

namespace musacoder::prompts {
namespace {

struct Block {
  std::string info;  // the fence's info string, lower-cased and trimmed ("python", "")
  std::string body;
};

std::string trim_lower(std::string_view s) {
  std::size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  std::string out = b == std::string_view::npos ? "" : std::string(s.substr(b, e - b + 1));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Fenced blocks whose fence lines start with ``` (after indentation); an unterminated last
// block runs to the end (a response cut off by the token limit), as in the verifier.
std::vector<Block> fenced_blocks(std::string_view text) {
  std::vector<Block> blocks;
  Block* open = nullptr;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    std::size_t ind = line.find_first_not_of(" \t");
    bool fence = ind != std::string_view::npos && line.substr(ind, 3) == "```";
    if (fence && open == nullptr) {
      blocks.push_back({trim_lower(line.substr(ind + 3)), ""});
      open = &blocks.back();
    } else if (fence) {
      open = nullptr;
    } else if (open != nullptr) {
      open->body.append(line);
      open->body.push_back('\n');
    }
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
  }
  return blocks;
}

bool is_python_info(const std::string& info) {
  return info.empty() || info == "python" || info == "py" || info == "python3";
}

bool defines_model_new(const std::string& code) {
  static const std::regex re(R"((^|\n)\s*class\s+ModelNew\s*[(:])");
  return std::regex_search(code, re);
}

}  // namespace

Result<std::string> extract_code(std::string_view response) {
  std::string_view answer = response;
  constexpr std::string_view kClose = "</think>";
  if (std::size_t close = response.rfind(kClose); close != std::string_view::npos) {
    answer = response.substr(close + kClose.size());
  } else if (response.find("<think>") != std::string_view::npos) {
    return invalid_argument("the response ends inside <think> (no </think>): no answer");
  }
  std::vector<Block> blocks = fenced_blocks(answer);
  bool any_python = false;
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    if (!is_python_info(it->info)) continue;
    any_python = true;
    if (defines_model_new(it->body)) return it->body;
  }
  if (blocks.empty()) return invalid_argument("the answer has no ```python block");
  if (!any_python) return invalid_argument("the answer has no ```python block (only other languages)");
  return invalid_argument("no ```python block of the answer defines `class ModelNew`");
}

}  // namespace musacoder::prompts
