// Reader for the trial-outputs file the runner writes (format in
// python/mooreeval_runner/tensors.py: each tensor in its own dtype's bytes). Values are
// widened to double here whatever the dtype (exact for every stored type but int64 beyond 2**53).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"

namespace musacoder::verify {

struct TensorData {
  std::string dtype;  // torch dtype name without "torch.", e.g. "float32"
  std::vector<int64_t> shape;
  std::vector<double> values;  // row-major, numel() entries
};

using TrialOutputs = std::vector<TensorData>;  // what one forward call returned

// Fails with kInvalidArgument on a malformed or truncated file (never reads past it).
Result<std::vector<TrialOutputs>> read_output_file(const std::filesystem::path& path);

}  // namespace musacoder::verify
