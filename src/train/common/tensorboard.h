// TensorBoard event files written directly (no TensorFlow, no protobuf library).
//
// A file "events.out.tfevents.<unix seconds>.<host>" is a sequence of TFRecords:
//   uint64 length (LE) | uint32 masked_crc32c(length bytes) | data[length] | uint32 masked_crc32c(data)
// with masked_crc32c(x) = ((c >> 15) | (c << 17)) + 0xa282ead8 and c the CRC-32C (Castagnoli) of x. Each data is a
// serialised tensorflow.Event: wall_time (1: double), step (2: int64), file_version (3: string, first record
// "brain.Event:2") or summary (5: Summary{ repeated Value value = 1 }, Value{ tag = 1: string,
// simple_value = 2: float }). TensorBoard's and tbparse's readers accept exactly this.
// Thread-safety: none; one writer per file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace musacoder::train {

// CRC-32C of `data` (exposed for tests: crc32c("123456789") == 0xe3069283).
uint32_t crc32c(std::string_view data);

class TensorBoardWriter {
 public:
  // Creates `dir` and a new event file in it.
  static Result<TensorBoardWriter> open(const std::filesystem::path& dir);
  TensorBoardWriter(TensorBoardWriter&& other) noexcept;
  TensorBoardWriter& operator=(TensorBoardWriter&&) = delete;
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  ~TensorBoardWriter();

  // One event with a scalar per (tag, value) at `step`; flushed to the OS so a live TensorBoard sees it.
  Status add_scalars(int64_t step, const std::vector<std::pair<std::string, double>>& scalars);
  const std::filesystem::path& path() const { return path_; }

 private:
  TensorBoardWriter(std::FILE* f, std::filesystem::path p) : file_(f), path_(std::move(p)) {}
  Status write_record(const std::string& data);
  std::FILE* file_ = nullptr;
  std::filesystem::path path_;
};

}  // namespace musacoder::train
