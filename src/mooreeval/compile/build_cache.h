// The content-addressed build cache: `<dir>/<key>/<library>.so` entries, published by
// atomic rename, looked up without locks, bounded in size by evicting the least recently
// used entries.
//
// Safe under concurrent threads and processes sharing one directory: a per-key lock file
// (flock) lets concurrent requests for one key build once; eviction runs under its own lock,
// never removes an entry whose key lock is held, and removes an entry by renaming it away
// first, so a lookup sees either a whole entry or none. A library handed out by lookup()
// may still be evicted later: callers that use it after the build stage take a hard link
// (materialize()).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace musacoder::build {

class BuildCache {
 public:
  // `dir` empty: a disabled cache (lookups miss, publish keeps the library where it is).
  // `max_bytes` 0: unbounded.
  BuildCache(std::filesystem::path dir, std::uint64_t max_bytes);

  bool enabled() const { return !dir_.empty(); }
  const std::filesystem::path& dir() const { return dir_; }

  // The cached library for `key`, refreshing its recency; nullopt on a miss.
  std::optional<std::filesystem::path> lookup(const std::string& key, const std::string& library_name) const;
  // Whether `key` is recorded as "does not build" (used for the lean path's attempts).
  bool has_failure(const std::string& key) const;
  void record_failure(const std::string& key, const std::string& log) const;

  // Copies `library` into the entry for `key` (atomically) and returns the cached path, or
  // `library` itself when the cache is disabled or the copy failed. May evict others.
  std::filesystem::path publish(const std::string& key, const std::filesystem::path& library) const;

  // Removes least recently used entries until the cache holds at most 90% of max_bytes.
  // Skips `keep` and entries being built. Returns the bytes removed.
  std::uint64_t evict(const std::string& keep = "") const;

  // Total bytes of all entries.
  std::uint64_t size_bytes() const;

 private:
  std::filesystem::path dir_;
  std::uint64_t max_bytes_;
};

// Exclusive right to build one key, across threads and processes. Waits (polling) until
// the lock is free or `deadline` passes (then timed_out()).
class KeyLock {
 public:
  KeyLock(const std::filesystem::path& cache_dir, const std::string& key,
          std::chrono::steady_clock::time_point deadline);
  ~KeyLock();
  KeyLock(const KeyLock&) = delete;
  KeyLock& operator=(const KeyLock&) = delete;
  bool timed_out() const { return timed_out_; }

 private:
  int fd_ = -1;
  bool held_ = false;
  bool timed_out_ = false;
};

// A hard link (or, across file systems, a copy) of `library` in `dir`, so that eviction
// cannot take it away while a job uses it. Returns `library` itself if neither works.
std::filesystem::path materialize(const std::filesystem::path& library, const std::filesystem::path& dir);

}  // namespace musacoder::build
