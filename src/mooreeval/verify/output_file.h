// Reader for the trial-outputs file the runner writes (format in
// python/mooreeval_runner/tensors.py: each tensor in its own dtype's bytes). The file is read
// into memory once and each TensorData is a view of its elements in the stored type; value(i)
// widens one element to double (exact for every stored type but int64 beyond 2**53).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "mooreeval/verify/storage_type.h"

namespace musacoder::verify {

// One output tensor: dtype and shape, and a read-only view of its numel() elements, row-major,
// little-endian, in storage() type, at data() (not aligned). Copies are cheap and share the
// bytes, which (the file's bytes, or from_values' own array) live as long as any copy does.
// Immutable: safe to read from several threads.
class TensorData {
 public:
  // A tensor stored as float64 that owns `values`, for tests and tools.
  // Requires values.size() == the product of shape (1 for a scalar, shape {}).
  static TensorData from_values(std::string dtype, std::vector<int64_t> shape, std::vector<double> values);

  // A view of `numel` elements of type `storage` at `data`, which `owner` keeps alive.
  // Requires numel == the product of shape (the reader checks this of every tensor in a file).
  TensorData(std::string dtype, std::vector<int64_t> shape, StorageType storage, const std::byte* data,
             std::size_t numel, std::shared_ptr<const void> owner)
      : dtype_(std::move(dtype)),
        shape_(std::move(shape)),
        storage_(storage),
        data_(data),
        numel_(numel),
        owner_(std::move(owner)) {}

  const std::string& dtype() const { return dtype_; }  // torch dtype name without "torch.", e.g. "float32"
  const std::vector<int64_t>& shape() const { return shape_; }
  StorageType storage() const { return storage_; }  // float64 for a dtype the runner widened
  std::size_t numel() const { return numel_; }
  const std::byte* data() const { return data_; }

  // Element i (requires i < numel()) widened to double as in storage_type.h. One switch per
  // call: for a loop over all elements, use visit_storage() and load<T>() instead.
  double value(std::size_t i) const;

 private:
  std::string dtype_;
  std::vector<int64_t> shape_;
  StorageType storage_;
  const std::byte* data_;
  std::size_t numel_;
  std::shared_ptr<const void> owner_;
};

using TrialOutputs = std::vector<TensorData>;  // what one forward call returned

// MCOUT003 (what the runner writes): `path` holds the trial count and trial t is in `path`.t;
// MCOUT002 (every trial in `path`) is still read. Fails with kNotFound if a file is missing,
// kInvalidArgument if one is not a regular file, is empty, or is malformed or truncated (never
// reads past its end), kInternal if one cannot be read.
// The bytes are a copy (not a mapping, which a writer still alive — the candidate's runner —
// could turn into SIGBUS by truncating the file) and live as long as any returned TensorData.
Result<std::vector<TrialOutputs>> read_output_file(const std::filesystem::path& path);

}  // namespace musacoder::verify
