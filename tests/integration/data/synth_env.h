// Shared set-up of the synthesis integration tests: verifier settings for the 2-core CI
// machine and helpers over output directories.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/files.h"
#include "data/synth.h"

namespace musacoder::testing {

inline const std::filesystem::path kSourceDir = MUSACODER_SOURCE_DIR;
inline const std::filesystem::path kBinaryDir = MUSACODER_BINARY_DIR;

inline data::VerifierSettings synth_verifier_settings(const std::string& backend) {
  data::VerifierSettings v;
  v.backend = backend;
  v.workers = 2;
  v.warmup_iters = 1;
  v.benchmark_iters = 3;
  v.max_build = std::chrono::seconds(400);
  v.max_run = std::chrono::seconds(120);
  v.seed = 1234;
  v.runner_dir = kSourceDir / "python";
  v.cache_dir = kBinaryDir / "test-build-cache";
  return v;
}

inline data::SynthOptions synth_options(const std::filesystem::path& out, int count, uint64_t seed) {
  data::SynthOptions o;
  o.out_dir = out;
  o.count = count;
  o.seed = seed;
  o.stable_metadata = true;
  o.progress = false;
  o.verifier = synth_verifier_settings("cpu");
  return o;
}

// Every regular file under `dir` (relative path -> bytes), skipping the given top-level names.
inline std::map<std::string, std::string> tree_bytes(const std::filesystem::path& dir,
                                                     const std::vector<std::string>& skip) {
  std::map<std::string, std::string> out;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = std::filesystem::relative(e.path(), dir).string();
    bool skipped = false;
    for (const std::string& s : skip) skipped = skipped || rel.rfind(s, 0) == 0;
    if (!skipped) out[rel] = *read_file(e.path());
  }
  return out;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    out.push_back(text.substr(pos, nl - pos));
    pos = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

}  // namespace musacoder::testing
