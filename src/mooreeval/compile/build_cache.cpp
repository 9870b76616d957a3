#include "mooreeval/compile/build_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "core/files.h"

namespace musacoder::build {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kFailureFile = "build-failed.log";

// The lock file of a key (also used by eviction to see whether a key is being built).
fs::path lock_path(const fs::path& dir, const std::string& key) {
  return dir / ".locks" / (key + ".lock");
}

std::uint64_t tree_bytes(const fs::path& p) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

bool is_entry(const fs::directory_entry& e) {
  const std::string name = e.path().filename().string();
  std::error_code ec;
  return !name.empty() && name[0] != '.' && e.is_directory(ec);
}

}  // namespace

BuildCache::BuildCache(fs::path dir, std::uint64_t max_bytes) : max_bytes_(max_bytes) {
  // Library paths go to runners whose working directory is the job's: keep them absolute.
  std::error_code ec;
  if (!dir.empty()) dir_ = fs::absolute(dir, ec);
}

std::optional<fs::path> BuildCache::lookup(const std::string& key, const std::string& library_name) const {
  if (!enabled()) return std::nullopt;
  const fs::path entry = dir_ / key;
  std::error_code ec;
  if (!fs::is_regular_file(entry / library_name, ec)) return std::nullopt;
  fs::last_write_time(entry, fs::file_time_type::clock::now(), ec);  // recency for eviction
  return entry / library_name;
}

bool BuildCache::has_failure(const std::string& key) const {
  std::error_code ec;
  return enabled() && fs::is_regular_file(dir_ / key / kFailureFile, ec);
}

void BuildCache::record_failure(const std::string& key, const std::string& log) const {
  if (!enabled()) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  const fs::path staging = dir_ / (".tmp-" + key + "-" + std::to_string(::getpid()) + "-failed");
  fs::create_directories(staging, ec);
  if (write_file_atomic(staging / kFailureFile, log.substr(0, 4096)).ok())
    fs::rename(staging, dir_ / key, ec);
  (void)remove_tree(staging);
}

fs::path BuildCache::publish(const std::string& key, const fs::path& library) const {
  if (!enabled()) return library;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  const fs::path name = library.filename();
  const fs::path staging = dir_ / (".tmp-" + key + "-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())));
  fs::create_directories(staging, ec);
  fs::copy_file(library, staging / name, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(staging, dir_ / key, ec);
  if (ec) (void)remove_tree(staging);  // someone else published it first: fine
  if (max_bytes_ > 0) evict(key);
  if (fs::is_regular_file(dir_ / key / name, ec)) return dir_ / key / name;
  return library;
}

std::uint64_t BuildCache::size_bytes() const {
  if (!enabled()) return 0;
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (is_entry(e)) total += tree_bytes(e.path());
  return total;
}

std::uint64_t BuildCache::evict(const std::string& keep) const {
  if (!enabled() || max_bytes_ == 0) return 0;
  // One evictor at a time; whoever finds the lock taken leaves the work to its holder.
  const int evict_fd = ::open((dir_ / ".evict.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (evict_fd < 0) return 0;
  if (::flock(evict_fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(evict_fd);
    return 0;
  }
  struct Entry {
    fs::path path;
    fs::file_time_type used;
    std::uint64_t bytes;
  };
  std::vector<Entry> entries;
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (!is_entry(e)) continue;
    Entry en{e.path(), fs::last_write_time(e.path(), ec), tree_bytes(e.path())};
    total += en.bytes;
    entries.push_back(en);
  }
  std::uint64_t removed = 0;
  const std::uint64_t target = max_bytes_ / 10 * 9;
  if (total > max_bytes_) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
    for (const auto& en : entries) {
      if (total - removed <= target) break;
      const std::string key = en.path.filename().string();
      if (key == keep) continue;
      // Skip a key someone is building right now (its lock is held).
      const int fd = ::open(lock_path(dir_, key).c_str(), O_RDWR | O_CLOEXEC);
      if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);
        continue;
      }
      const fs::path trash = dir_ / (".trash-" + key + "-" + std::to_string(::getpid()));
      fs::rename(en.path, trash, ec);
      if (!ec) {
        (void)remove_tree(trash);
        removed += en.bytes;
      }
      if (fd >= 0) {
        ::flock(fd, LOCK_UN);
        ::close(fd);
      }
    }
  }
  ::flock(evict_fd, LOCK_UN);
  ::close(evict_fd);
  return removed;
}

KeyLock::KeyLock(const fs::path& cache_dir, const std::string& key, Clock::time_point deadline) {
  std::error_code ec;
  fs::create_directories(cache_dir / ".locks", ec);
  fd_ = ::open(lock_path(cache_dir, key).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return;  // no lock possible: build without one (the publish is still atomic)
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (Clock::now() >= deadline) {
      timed_out_ = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  held_ = true;
}

KeyLock::~KeyLock() {
  if (held_) ::flock(fd_, LOCK_UN);
  if (fd_ >= 0) ::close(fd_);
}

fs::path materialize(const fs::path& library, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path target = dir / library.filename();
  fs::remove(target, ec);
  fs::create_hard_link(library, target, ec);
  if (ec) {
    ec.clear();
    fs::copy_file(library, target, fs::copy_options::overwrite_existing, ec);
  }
  return ec ? library : target;
}

}  // namespace musacoder::build
