// Safetensors reader and writer (https://github.com/huggingface/safetensors format): an 8-byte
// little-endian header length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {...}},
// then the raw little-endian tensor bytes.
//
// Reading memory-maps the file (copy-on-write, so a tensor written to in place never touches the file) and
// hands out zero-copy CPU tensors that keep the mapping alive. Every header is validated against the file
// size and the dtype sizes before any byte is touched, so a truncated or hostile file gives a Status,
// never a crash. Thread-safety: a SafetensorsFile / Checkpoint is immutable after open(); concurrent
// tensor() calls are safe.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace musacoder::model {

struct TensorEntry {
  std::string dtype;           // "BF16", "F16", "F32", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
  std::vector<int64_t> shape;  // row-major
  uint64_t begin = 0;          // byte offsets into the data section
  uint64_t end = 0;
};

// One .safetensors file, memory-mapped.
class SafetensorsFile : public std::enable_shared_from_this<SafetensorsFile> {
 public:
  static Result<std::shared_ptr<SafetensorsFile>> open(const std::filesystem::path& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::map<std::string, TensorEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::filesystem::path& path() const { return path_; }

  // A CPU tensor viewing the mapped bytes (copied only when misaligned for its dtype); it keeps this
  // file mapped for as long as it lives. kNotFound for an unknown name.
  Result<at::Tensor> tensor(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  std::filesystem::path path_;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::size_t data_offset_ = 0;  // 8 + header length
  std::map<std::string, TensorEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// A checkpoint directory: model.safetensors, or model.safetensors.index.json naming its shards.
class SafetensorsCheckpoint {
 public:
  // `path`: a directory (index preferred over a single file) or a .safetensors file.
  static Result<SafetensorsCheckpoint> open(const std::filesystem::path& path);

  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  Result<TensorEntry> entry(const std::string& name) const;
  Result<at::Tensor> tensor(const std::string& name) const;

 private:
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, std::size_t> where_;  // name -> index into files_
};

// The safetensors dtype string for a torch dtype; kInvalidArgument for dtypes the format lacks.
Result<std::string> safetensors_dtype(at::ScalarType t);

// Writes one file (atomically, via rename). Tensors may live on any device and need not be contiguous;
// names must be unique. `metadata` goes to "__metadata__" (transformers expects {"format": "pt"}).
Status write_safetensors(const std::filesystem::path& path,
                         const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// Writes `dir`/model.safetensors, or, when the total exceeds `max_shard_bytes`,
// model-0000K-of-0000N.safetensors shards plus model.safetensors.index.json (transformers' layout).
// Tensors stay in the given order; a tensor larger than max_shard_bytes gets a shard of its own.
Status write_safetensors_dir(const std::filesystem::path& dir,
                             const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                             uint64_t max_shard_bytes);

}  // namespace musacoder::model
