#include "mooreeval/pipeline/inspect_cache.h"

#include <gtest/gtest.h>

#include "core/files.h"

namespace musacoder::eval {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Fixture {
  TempDir dir = std::move(TempDir::create("mc-inspect-cache-").value());
  fs::path runner = dir.path() / "runner";
  fs::path cache = dir.path() / "cache";
  Fixture() {
    fs::create_directories(runner / "mooreeval_runner");
    EXPECT_TRUE(write_file_atomic(runner / "mooreeval_runner" / "static_rules.py", "RULES = 1\n").ok());
    fs::create_directories(dir.path() / "scratch");
  }
  InspectCache make(std::uint64_t max_bytes = 0) const {
    return InspectCache(build::BuildCache(cache, max_bytes), runner);
  }
};

const json kOk = {
    {"status", "ok"}, {"extensions", json::array({{{"name", "ext"}}})}, {"findings", json::array()}};

TEST(InspectCache, RemembersOkResultsUnderTheirKey) {
  Fixture f;
  const InspectCache c = f.make();
  const std::string key = c.key("class ModelNew: pass\n", "task source");
  EXPECT_FALSE(c.lookup(key));
  c.remember(key, kOk, f.dir.path() / "scratch");
  auto hit = c.lookup(key);
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, kOk);
  // A second cache object over the same directory (another process) sees it too.
  EXPECT_TRUE(f.make().lookup(key));
}

TEST(InspectCache, KeysCoverSourceTaskAndRunnerCode) {
  Fixture f;
  const InspectCache before = f.make();
  const std::string key = before.key("source", "task");
  EXPECT_EQ(key, before.key("source", "task"));
  EXPECT_NE(key, before.key("source ", "task"));
  EXPECT_NE(key, before.key("source", "task "));
  EXPECT_NE(before.key("ab", "c"), before.key("a", "bc"));  // parts are length-delimited
  // A changed runner rule must not serve findings recorded by the old one.
  ASSERT_TRUE(write_file_atomic(f.runner / "mooreeval_runner" / "static_rules.py", "RULES = 2\n").ok());
  EXPECT_NE(key, f.make().key("source", "task"));
}

TEST(InspectCache, FailuresAreNeverRememberedAndBrokenEntriesMiss) {
  Fixture f;
  const InspectCache c = f.make();
  const std::string key = c.key("x", "y");
  c.remember(key, {{"status", "runtime_error"}, {"message", "raised at import"}}, f.dir.path() / "scratch");
  EXPECT_FALSE(c.lookup(key));
  c.remember(key, kOk, f.dir.path() / "scratch");
  ASSERT_TRUE(c.lookup(key));
  ASSERT_TRUE(write_file_atomic(f.cache / key / "inspect.json", "{not json").ok());  // damaged on disk
  EXPECT_FALSE(c.lookup(key));
}

TEST(InspectCache, ADisabledCacheAlwaysMisses) {
  Fixture f;
  const InspectCache c(build::BuildCache({}, 0), f.runner);
  EXPECT_FALSE(c.enabled());
  const std::string key = c.key("x", "y");
  c.remember(key, kOk, f.dir.path() / "scratch");
  EXPECT_FALSE(c.lookup(key));
  EXPECT_FALSE(fs::exists(f.cache));
  // No readable runner code, no fingerprint: the cache stays off rather than ignore the rules.
  const InspectCache blind(build::BuildCache(f.cache, 0), f.dir.path() / "no-such-runner");
  EXPECT_FALSE(blind.enabled());
  blind.remember(key, kOk, f.dir.path() / "scratch");
  EXPECT_FALSE(blind.lookup(key));
}

}  // namespace
}  // namespace musacoder::eval
