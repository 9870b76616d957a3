// Turning a submission into candidate source: either a Python file as is, or a raw model
// response from which the fenced code block holding `class ModelNew` is taken.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace musacoder::candidate {

struct ExtractOptions {
  std::size_t max_bytes = 1 << 20;  // larger submissions are rejected (format error)
};

struct Candidate {
  std::string source;         // Python source of the submission
  bool from_fence = false;    // true when taken from a ``` block of a response
  std::string source_sha256;  // of `source`
};

// Errors are the candidate's fault (the verdict is format_error) and say why: empty,
// too large, not UTF-8, no code block with `class ModelNew`.
Result<Candidate> extract_candidate(std::string_view text, const ExtractOptions& options = {});

}  // namespace musacoder::candidate
