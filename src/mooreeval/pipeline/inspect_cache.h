// Remembered inspections. The inspect stage (runner "inspect" mode: parse, static findings,
// the module executed with load_inline recording) depends only on the candidate's source,
// the task file and the runner's code, so an identical submission — frequent in RL, where a
// policy repeats itself — need not be inspected again: its result comes from the build cache
// directory, as entry `inspect-<key>/inspect.json` (same atomic publish, LRU bound and
// cross-process safety as the built libraries, src/mooreeval/compile/build_cache.h).
//
// Only results with status "ok" are kept (the candidate parsed and its findings, if any, are
// the AST's); failures are re-inspected, so a crash is never replayed from a file.
//
// Thread-safety: const methods may be called concurrently.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "mooreeval/compile/build_cache.h"

namespace musacoder::eval {

class InspectCache {
 public:
  // `runner_dir` holds mooreeval_runner/: its files (hash_tree, read once here) are part of
  // every key, so a changed rule never serves old findings. A disabled `cache`, or a runner
  // tree that cannot be read, makes every lookup miss.
  InspectCache(build::BuildCache cache, const std::filesystem::path& runner_dir);

  bool enabled() const { return cache_.enabled() && !runner_fingerprint_.empty(); }
  // The key of one inspection: the runner's code, the task file's bytes and the source.
  std::string key(std::string_view candidate_source, std::string_view task_source) const;
  // The remembered result, or nullopt (miss, disabled, unreadable entry).
  std::optional<nlohmann::json> lookup(const std::string& key) const;
  // Keeps `result` if its status is "ok"; `scratch` is a directory of this job to stage it in.
  void remember(const std::string& key, const nlohmann::json& result,
                const std::filesystem::path& scratch) const;

 private:
  build::BuildCache cache_;
  std::string runner_fingerprint_;
};

}  // namespace musacoder::eval
