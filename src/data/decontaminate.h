// Decontamination against a benchmark checkout (`--exclude-suite DIR`, e.g. a KernelBench
// clone): every *.py under DIR is canonicalised (python_canon.h) and shingled; a synthesized
// task is flagged when its canonical form equals a suite file's ("canonical") or when at
// least `ngram_threshold` of its n-gram shingles occur in the suite ("ngram").
//
// Thread-safety: check() is const and may be called concurrently after construction.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/status.h"

namespace musacoder::data {

struct DecontaminationOptions {
  std::size_t ngram = 8;           // tokens per shingle
  double ngram_threshold = 0.8;    // flag at or above this share of shingles seen in the suite
};

struct Overlap {
  std::string kind;        // "canonical" or "ngram"
  std::string suite_file;  // relative to the suite dir (the one with most shared shingles for "ngram")
  double score = 1.0;      // share of shingles seen in the suite (1 for canonical)
};

class Decontaminator {
 public:
  // Reads every *.py under `suite_dir`; kNotFound when it does not exist, kInvalidArgument
  // when it holds no Python file.
  static Result<Decontaminator> load(const std::filesystem::path& suite_dir, const DecontaminationOptions& options);

  // The overlap of one task module with the suite, or nothing.
  std::optional<Overlap> check(const std::string& task_source) const;

  std::size_t suite_files() const { return files_; }

 private:
  DecontaminationOptions options_;
  std::size_t files_ = 0;
  std::unordered_map<std::string, std::string> canonical_;  // canonical form -> file
  std::unordered_map<std::string, std::string> shingle_;    // shingle -> first file holding it
};

}  // namespace musacoder::data
