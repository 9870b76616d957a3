#include "core/files.h"

#include <gtest/gtest.h>
#include <unistd.h>

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

TEST(Files, RemoveTreeRemovesNestedTreesButNeverFollowsLinks) {
  namespace fs = std::filesystem;
  auto outside = TempDir::create("mc-files-outside-");
  ASSERT_TRUE(outside.ok());
  ASSERT_TRUE(write_file_atomic(outside->path() / "keep.txt", "precious").ok());
  auto dir = TempDir::create("mc-files-tree-");
  ASSERT_TRUE(dir.ok());
  const fs::path root = dir->path() / "root";
  fs::create_directories(root / "a" / "b" / "c");
  ASSERT_TRUE(write_file_atomic(root / "a" / "b" / "c" / "deep.bin", "1").ok());
  ASSERT_TRUE(write_file_atomic(root / "top.txt", "2").ok());
  fs::create_directory_symlink(outside->path(), root / "a" / "to_outside");
  fs::create_symlink(root / "missing", root / "dangling");

  ASSERT_TRUE(remove_tree(root).ok());
  EXPECT_FALSE(fs::exists(fs::symlink_status(root)));
  EXPECT_EQ(*read_file(outside->path() / "keep.txt"), "precious");  // the link's target survives

  // A missing path is fine; a single file or a link is removed itself.
  EXPECT_TRUE(remove_tree(root).ok());
  ASSERT_TRUE(write_file_atomic(dir->path() / "file", "3").ok());
  EXPECT_TRUE(remove_tree(dir->path() / "file").ok());
  EXPECT_FALSE(fs::exists(dir->path() / "file"));
  fs::create_directory_symlink(outside->path(), dir->path() / "dirlink");
  EXPECT_TRUE(remove_tree(dir->path() / "dirlink").ok());
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir->path() / "dirlink")));
  EXPECT_TRUE(fs::exists(outside->path() / "keep.txt"));
}

TEST(Files, RemoveTreeReportsWhatItCouldNotRemove) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may remove entries of a read-only directory";
  namespace fs = std::filesystem;
  auto dir = TempDir::create("mc-files-ro-");
  ASSERT_TRUE(dir.ok());
  fs::create_directories(dir->path() / "ro");
  ASSERT_TRUE(write_file_atomic(dir->path() / "ro" / "f", "1").ok());
  fs::permissions(dir->path() / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  Status st = remove_tree(dir->path() / "ro");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot remove"), std::string::npos) << st.to_string();
  fs::permissions(dir->path() / "ro", fs::perms::owner_all);
}

}  // namespace
}  // namespace musacoder
