// Internals of mc_musa shared by its .cpp files (never included from outside src/musa).
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "musa/musa.h"

namespace musacoder::musa::detail {

extern const char* const kTorchadaRulesJson;
extern const char* const kAdditionsJson;

// A rule ready to apply in one direction.
struct CompiledRule {
  const Rule* rule = nullptr;
  bool regex = false;
  std::string from, to;  // plain text
  std::regex pattern;    // regex rules
  std::string replacement;
};

// kToMusa: every rule in table order. kToCuda: the reversible ones, additions first (last to first),
// then torchada's longest MUSA text first.
const std::vector<CompiledRule>& compiled_rules(Direction d);

// Lines are 1-based; `offset` is a byte offset into `text`.
int line_of(std::string_view text, std::size_t offset);

bool is_identifier(std::string_view s);

}  // namespace musacoder::musa::detail
