// Small file-system helpers with Status errors, and an RAII temporary directory.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/status.h"

namespace musacoder {

// Reads a whole file. Fails with kNotFound if missing, kInvalidArgument if it is not a
// regular file or larger than max_bytes.
Result<std::string> read_file(const std::filesystem::path& path, std::size_t max_bytes = 64u << 20);

// Writes via a temporary file and rename(), so readers never see a partial file.
Status write_file_atomic(const std::filesystem::path& path, std::string_view data);

// A fresh directory under `parent` (system temp dir when empty), removed recursively
// on destruction unless keep() was called.
class TempDir {
 public:
  static Result<TempDir> create(const std::string& prefix, const std::filesystem::path& parent = {});
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }
  void keep() { keep_ = true; }

 private:
  explicit TempDir(std::filesystem::path p) : path_(std::move(p)) {}
  std::filesystem::path path_;
  bool keep_ = false;
};

}  // namespace musacoder
