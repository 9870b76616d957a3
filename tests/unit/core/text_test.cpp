#include "core/text.h"

#include <gtest/gtest.h>

namespace musacoder {
namespace {

TEST(Utf8, AcceptsValidAndRejectsInvalid) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("中文 and emoji \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xFF\xFE"));
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));      // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));  // surrogate
  EXPECT_FALSE(is_valid_utf8("\xE4\xB8"));      // truncated
  EXPECT_EQ(sanitize_utf8("a\xFF"
                          "b"),
            "a?b");
}

TEST(Sha256, KnownVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(TruncateMiddle, KeepsHeadAndTail) {
  std::string s = "HEAD" + std::string(1000, 'x') + "TAIL";
  auto t = truncate_middle(s, 100);
  EXPECT_EQ(t.substr(0, 4), "HEAD");
  EXPECT_EQ(t.substr(t.size() - 4), "TAIL");
  EXPECT_NE(t.find("truncated"), std::string::npos);
  EXPECT_EQ(truncate_middle("short", 100), "short");
}

}  // namespace
}  // namespace musacoder
