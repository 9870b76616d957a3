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

// SHA-256 over every regular file below `dir` (relative path and content hash), in path
// order: the fingerprint of a source tree. Fails if the tree cannot be listed or read.
Result<std::string> hash_tree(const std::filesystem::path& dir);

// Removes `path` and, if it is a directory, everything below it, without following symbolic
// links (a link is removed, never its target). A missing path is not an error. Walks with nftw(3)
// rather than std::filesystem::remove_all: the CUDA wheels of libtorch export their own copy of
// std::filesystem, and in a program that links libtorch that copy's remove_all can win the symbol
// binding and jump to a null pointer (issue 6). On failure the message names the first entry that
// could not be removed; removal goes on past it.
Status remove_tree(const std::filesystem::path& path);

// A fresh directory under `parent` (system temp dir when empty), removed with remove_tree()
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
