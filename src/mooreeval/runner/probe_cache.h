// The toolchain probe (runner mode `probe`: imports torch, ~10 s on a loaded 2-core machine) is
// what a one-shot `mooreeval eval` waited for before anything else could start. Its answer depends
// only on the interpreter, the torch installation, the runner's own code and a few environment
// variables, so it is remembered per fingerprint of exactly those:
//   - a small Python program that does NOT import torch (~50 ms) reports sys.executable, the
//     version, sys.path and, for the torch package it would import, the path, size and mtime of
//     torch/__init__.py, torch/version.py, utils/cpp_extension.py and every torch/_C*.so;
//   - the SHA-256 of every .py file of python/mooreeval_runner (the probe's own code);
//   - CXX, CC, PATH, PYTORCH_NVCC, CUDA_HOME, CUDA_PATH, MUSA_HOME, TORCH_CUDA_ARCH_LIST and the
//     runner's extra environment.
// Device answers (cuda_available, capabilities) can change without any of that changing, so the
// cache serves the cpu backend only; GPU backends always probe. A damaged entry is ignored.
// Thread-safety: free functions; entries are written atomically (write, rename).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"
#include "mooreeval/runner/runner.h"

namespace musacoder::run {

// The fingerprint key (hex SHA-256) for the runner options, or an error when the interpreter
// cannot even report where torch is (then: probe normally).
Result<std::string> probe_fingerprint(const RunnerOptions& options);

// The remembered probe result under `cache_dir/.toolchain-probes/<key>.json`, if any and well-formed.
std::optional<nlohmann::json> load_probe(const std::filesystem::path& cache_dir, const std::string& key);

// Remembers a successful probe result (status "ok"); failures to write are ignored (a cache).
void store_probe(const std::filesystem::path& cache_dir, const std::string& key, const nlohmann::json& result);

}  // namespace musacoder::run
