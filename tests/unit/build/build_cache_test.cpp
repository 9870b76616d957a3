#include "mooreeval/compile/build_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/files.h"

namespace musacoder::build {
namespace {

namespace fs = std::filesystem;

fs::path make_library(const fs::path& dir, const std::string& name, std::size_t bytes) {
  fs::create_directories(dir);
  const fs::path p = dir / name;
  EXPECT_TRUE(write_file_atomic(p, std::string(bytes, 'x')).ok());
  return p;
}

TEST(BuildCache, PublishThenLookup) {
  auto dir = TempDir::create("mc-cache-test-");
  ASSERT_TRUE(dir.ok());
  BuildCache cache(dir->path() / "cache", 0);
  EXPECT_FALSE(cache.lookup("k1", "ext.so"));
  const fs::path built = make_library(dir->path() / "work", "ext.so", 100);
  const fs::path cached = cache.publish("k1", built);
  EXPECT_EQ(cached, dir->path() / "cache" / "k1" / "ext.so");
  auto hit = cache.lookup("k1", "ext.so");
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, cached);
  EXPECT_FALSE(cache.lookup("k1", "other.so"));
  EXPECT_EQ(cache.size_bytes(), 100u);
}

TEST(BuildCache, DisabledCacheKeepsTheLibraryWhereItIs) {
  BuildCache cache("", 0);
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.publish("k", "/some/where/ext.so"), fs::path("/some/where/ext.so"));
  EXPECT_FALSE(cache.lookup("k", "ext.so"));
}

TEST(BuildCache, FailureMarkers) {
  auto dir = TempDir::create("mc-cache-test-");
  ASSERT_TRUE(dir.ok());
  BuildCache cache(dir->path() / "cache", 0);
  EXPECT_FALSE(cache.has_failure("lean1"));
  cache.record_failure("lean1", "error: no such member");
  EXPECT_TRUE(cache.has_failure("lean1"));
  EXPECT_FALSE(cache.lookup("lean1", "ext.so"));  // a failure is not a library
}

// Above the bound, the least recently used entries go first, down to 90% of the bound;
// the entry just published and entries being built (key lock held) stay.
TEST(BuildCache, EvictsLeastRecentlyUsedDownToNinetyPercent) {
  auto dir = TempDir::create("mc-cache-test-");
  ASSERT_TRUE(dir.ok());
  const fs::path cdir = dir->path() / "cache";
  BuildCache unbounded(cdir, 0);
  for (int i = 0; i < 5; ++i) {
    unbounded.publish("k" + std::to_string(i),
                      make_library(dir->path() / ("w" + std::to_string(i)), "e.so", 1000));
    // Distinct, increasing recency (entry mtimes), independent of file system granularity.
    fs::last_write_time(cdir / ("k" + std::to_string(i)),
                        fs::file_time_type::clock::now() - std::chrono::hours(10 - i));
  }
  ASSERT_TRUE(unbounded.lookup("k0", "e.so"));  // k0 becomes the most recently used
  EXPECT_EQ(unbounded.size_bytes(), 5000u);

  KeyLock building(cdir, "k1", std::chrono::steady_clock::now() + std::chrono::seconds(5));
  ASSERT_FALSE(building.timed_out());
  BuildCache bounded(cdir, 3500);  // target after eviction: 3150 bytes
  bounded.publish("k5", make_library(dir->path() / "w5", "e.so", 1000));
  // 6000 bytes; oldest first: k1 (locked, kept), then k2, k3, k4 go (3000 <= 3150).
  EXPECT_TRUE(bounded.lookup("k0", "e.so"));
  EXPECT_TRUE(bounded.lookup("k1", "e.so"));
  EXPECT_FALSE(bounded.lookup("k2", "e.so"));
  EXPECT_FALSE(bounded.lookup("k3", "e.so"));
  EXPECT_FALSE(bounded.lookup("k4", "e.so"));
  EXPECT_TRUE(bounded.lookup("k5", "e.so"));
  EXPECT_EQ(bounded.size_bytes(), 3000u);
  EXPECT_EQ(bounded.evict(), 0u);  // under the bound: nothing to do
}

TEST(BuildCache, MaterializeSurvivesEviction) {
  auto dir = TempDir::create("mc-cache-test-");
  ASSERT_TRUE(dir.ok());
  BuildCache cache(dir->path() / "cache", 0);
  const fs::path cached = cache.publish("k", make_library(dir->path() / "w", "e.so", 10));
  const fs::path mine = materialize(cached, dir->path() / "job");
  EXPECT_EQ(mine, dir->path() / "job" / "e.so");
  ASSERT_TRUE(remove_tree(dir->path() / "cache" / "k").ok());
  auto text = read_file(mine);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->size(), 10u);
}

TEST(KeyLock, SecondHolderWaitsUntilTheDeadline) {
  auto dir = TempDir::create("mc-cache-test-");
  ASSERT_TRUE(dir.ok());
  KeyLock first(dir->path(), "k", std::chrono::steady_clock::now() + std::chrono::seconds(5));
  ASSERT_FALSE(first.timed_out());
  bool timed_out = false;
  std::thread other([&] {
    KeyLock second(dir->path(), "k", std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
    timed_out = second.timed_out();
  });
  other.join();
  EXPECT_TRUE(timed_out);
}

}  // namespace
}  // namespace musacoder::build
