// A canonical form of a KernelBench-format task module, for decontamination: what the task
// computes, with its spelling normalised away. Comments, docstrings and formatting are
// dropped; module constants (`batch_size = 16`) are substituted; a forward's local
// assignments are inlined into its return expression; forward parameters become in0, in1...;
// `self.<attr>` becomes the expression __init__ assigned to it; torch.nn.functional / nn.functional
// become F. Two tasks that build the same modules and compute the same expression on inputs
// of the same shapes get the same canonical form, whatever their names and layout.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace musacoder::data {

struct PythonCanon {
  std::string canonical;            // "forward: ... | init: ... | inputs: ... | init_inputs: ..."
  std::vector<std::string> tokens;  // the canonical form's tokens (for n-gram shingles)
};

PythonCanon canonicalize_task(std::string_view source);

// Shingles of `n` consecutive tokens (one shingle of all tokens when there are fewer).
std::vector<std::string> shingles(const std::vector<std::string>& tokens, std::size_t n);

}  // namespace musacoder::data
