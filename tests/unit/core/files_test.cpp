#include "core/files.h"

#include <gtest/gtest.h>

namespace musacoder {
namespace {

TEST(Files, ReadWriteAndLimits) {
  auto dir = TempDir::create("mc-files-test-");
  ASSERT_TRUE(dir.ok());
  auto p = dir->path() / "f.txt";
  ASSERT_TRUE(write_file_atomic(p, "hello").ok());
  auto r = read_file(p);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "hello");
  auto big = read_file(p, 3);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(read_file(dir->path() / "missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(read_file(dir->path()).status().code(), StatusCode::kInvalidArgument);
}

TEST(Files, ReadsProcFilesThatReportNoSize) {
  // /proc files stat as 0 bytes; cgroup detection and the GPU's device minor read them.
  auto r = read_file("/proc/self/status");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_NE(r->find("Pid:"), std::string::npos);
  EXPECT_FALSE(read_file("/proc/self/status", 16).ok());  // still bounded
}

TEST(Files, TempDirIsRemoved) {
  std::filesystem::path where;
  {
    auto dir = TempDir::create("mc-files-test-");
    ASSERT_TRUE(dir.ok());
    where = dir->path();
    ASSERT_TRUE(write_file_atomic(where / "x", "1").ok());
    EXPECT_TRUE(std::filesystem::exists(where));
  }
  EXPECT_FALSE(std::filesystem::exists(where));
}

}  // namespace
}  // namespace musacoder
