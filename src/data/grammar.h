// The grammar's sampler: a seed -> one operator program (data/program.h). The same seed and
// options always give the same program, on every platform (own splitmix64 stream, no std::
// distributions, whose results are implementation-defined).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/program.h"

namespace musacoder::data {

// Categories in the order the card lists them.
const std::vector<std::string>& all_categories();

struct GrammarOptions {
  // Categories to draw from (empty: all), each with its default weight.
  std::vector<std::string> categories;
  // Dtypes to draw from (empty: float32 60%, float16 20%, bfloat16 20%; else uniform).
  std::vector<DType> dtypes;
  // Largest element count of any tensor of a program: keeps one PyTorch CPU forward in the
  // 0.1-5 ms range the verifier's trials expect (the same tasks are used on GPUs).
  int64_t max_elements = int64_t{1} << 18;
};

// Checks the option values (unknown category names).
Status validate(const GrammarOptions& options);

// One program from `seed`. Deterministic; requires validate(options).ok().
Program sample_program(uint64_t seed, const GrammarOptions& options);

// Mixes a run seed and an index into a program seed (splitmix64 finaliser).
uint64_t mix_seed(uint64_t seed, uint64_t index);

}  // namespace musacoder::data
