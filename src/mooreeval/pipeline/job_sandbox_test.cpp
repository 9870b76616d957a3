#include "mooreeval/pipeline/job_sandbox.h"

#include <gtest/gtest.h>

#include "core/files.h"

namespace musacoder::eval {
namespace {

namespace fs = std::filesystem;

TEST(CompilerPrefixes, ACompilerOutsideUsrBringsItsPrefix) {
  // The GPU machine's g++ is /opt/gcc/bin/g++: the build sandbox must see /opt/gcc.
  auto dir = TempDir::create("mc-prefix-test-");
  ASSERT_TRUE(dir.ok());
  const fs::path prefix = fs::absolute(dir->path()) / "gcc";
  fs::create_directories(prefix / "bin");
  ASSERT_TRUE(write_file_atomic(prefix / "bin/g++", "").ok());
  build::Toolchain t;
  t.cxx = (prefix / "bin/g++").string();
  EXPECT_EQ(compiler_prefixes(t), std::vector<fs::path>{prefix});
  auto ro = toolchain_read_only(t);
  EXPECT_NE(std::find(ro.begin(), ro.end(), prefix), ro.end());
}

TEST(CompilerPrefixes, TheSystemCompilerNeedsNothingMore) {
  build::Toolchain t;
  t.cxx = "/usr/bin/g++";
  EXPECT_TRUE(compiler_prefixes(t).empty());
  t.cxx = "no-such-compiler-anywhere";
  EXPECT_TRUE(compiler_prefixes(t).empty());
}

}  // namespace
}  // namespace musacoder::eval
