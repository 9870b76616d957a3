#include "mooreeval/candidate/extract.h"

#include <gtest/gtest.h>

namespace musacoder::candidate {
namespace {

TEST(Extract, PlainFileIsTakenAsIs) {
  auto c = extract_candidate("import torch\nclass ModelNew(nn.Module):\n    pass\n");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->from_fence);
  EXPECT_EQ(c->source_sha256.size(), 64u);
}

TEST(Extract, TakesTheLastFencedBlockWithModelNew) {
  std::string response =
      "Here is a draft:\n```python\nclass ModelNew(nn.Module):\n    draft = 1\n```\n"
      "And a helper:\n```cpp\nint x;\n```\n"
      "Final answer:\n```python\nimport torch\nclass ModelNew(nn.Module):\n    final = 1\n```\nDone.";
  auto c = extract_candidate(response);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->from_fence);
  EXPECT_NE(c->source.find("final = 1"), std::string::npos);
  EXPECT_EQ(c->source.find("```"), std::string::npos);
}

TEST(Extract, UnterminatedFenceRunsToTheEnd) {
  auto c = extract_candidate("text\n```python\nclass ModelNew(nn.Module):\n    x = 1\n");
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->source.find("x = 1"), std::string::npos);
}

TEST(Extract, BadSubmissionsAreFormatErrors) {
  EXPECT_NE(extract_candidate("").status().message().find("empty"), std::string::npos);
  EXPECT_NE(extract_candidate("  \n\t").status().message().find("empty"), std::string::npos);
  EXPECT_NE(extract_candidate("class ModelNew:\n\xFF").status().message().find("UTF-8"), std::string::npos);
  EXPECT_NE(extract_candidate(std::string("class ModelNew:\0", 16)).status().message().find("NUL"),
            std::string::npos);
  std::string huge = "class ModelNew:\n" + std::string((1 << 20) + 1, '#');
  EXPECT_NE(extract_candidate(huge).status().message().find("over the limit"), std::string::npos);
  EXPECT_NE(extract_candidate("```python\nprint(1)\n```").status().message().find("no code block"),
            std::string::npos);
  EXPECT_NE(extract_candidate("print(1)").status().message().find("ModelNew"), std::string::npos);
}

}  // namespace
}  // namespace musacoder::candidate
