// Reader for the trial-outputs file the runner writes (format in
// python/mooreeval_runner/tensors.py). Values are float64 regardless of dtype.
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
