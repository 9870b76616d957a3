// Suites: KernelBench's folder layout (a small copy made here), task folders with sidecars, id lists,
// the content hash, and tasks that cannot load being flagged rather than fatal.
#include "kernelbench/suite.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

#include "core/files.h"

namespace musacoder::kernelbench {
namespace {
namespace fs = std::filesystem;

constexpr const char* kTask =
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
    "    def forward(self, x):\n        return torch.relu(x)\n\ndef get_inputs():\n    return [torch.randn(8)]\n\n"
    "def get_init_inputs():\n    return []\n";

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("kb_suite_test_" + std::to_string(::getpid()) + "_" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((path / rel).parent_path());
    ASSERT_TRUE(write_file_atomic(path / rel, text).ok());
  }
};

void make_kernelbench(const TempDir& d) {
  d.write("KernelBench/level1/1_Square_matrix_multiplication_.py", kTask);
  d.write("KernelBench/level1/19_ReLU.py", kTask);
  d.write("KernelBench/level1/2_Broken.py", "import torch\n# no Model here\ndef get_inputs():\n    return []\n");
  d.write("KernelBench/level2/1_Conv2D_ReLU_BiasAdd.py", kTask);
  d.write("KernelBench/level3/5_AlexNet.py", kTask);
  d.write("KernelBench/level3/README.md", "not a task");
}

TEST(Suite, ReadsKernelBenchLayoutAndFlagsMalformedTasks) {
  TempDir d;
  make_kernelbench(d);
  auto s = load_kernelbench(d.path, {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->tasks.size(), 5u);
  EXPECT_EQ(s->usable_count(), 4u);
  EXPECT_EQ(s->id, "kernelbench:L1-3");
  EXPECT_EQ(s->tasks[0].id, "level1/1_Square_matrix_multiplication_");
  EXPECT_EQ(s->tasks[0].problem_id, 1);
  EXPECT_EQ(s->tasks[1].id, "level1/2_Broken");
  EXPECT_EQ(s->tasks[1].load_error, "no `class Model`");
  EXPECT_EQ(s->tasks[2].problem_id, 19);
  EXPECT_EQ(s->tasks[3].level, 2);
  EXPECT_EQ(s->tasks[4].id, "level3/5_AlexNet");
  // The KernelBench/ folder itself works too, and gives the same suite.
  auto inner = load_kernelbench(d.path / "KernelBench", {});
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(inner->content_hash, s->content_hash);
}

TEST(Suite, SelectsLevelsAndProblems) {
  TempDir d;
  make_kernelbench(d);
  auto s = load_kernelbench(d.path, {{1}, {1, 19}});
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->tasks.size(), 2u);
  EXPECT_EQ(s->id, "kernelbench:L1/p1,19");
  auto none = load_kernelbench(d.path, {{4}, {}});
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
}

TEST(Suite, FlagsNamesWithoutIdsDuplicatesAndUnreadableText) {
  TempDir d;
  d.write("KernelBench/level1/ReLU.py", kTask);
  d.write("KernelBench/level1/3_A.py", kTask);
  d.write("KernelBench/level1/3_B.py", kTask);
  d.write("KernelBench/level1/4_Bytes.py", std::string(kTask) + "# \xff\n");
  auto s = load_kernelbench(d.path, {{1}, {}});
  ASSERT_TRUE(s.ok());
  std::map<std::string, std::string> errors;
  for (const auto& t : s->tasks) errors[t.id] = t.load_error;
  EXPECT_EQ(errors["level1/ReLU"], "file name has no numeric problem id");
  EXPECT_EQ(errors["level1/3_A"], "");
  EXPECT_EQ(errors["level1/3_B"], "duplicate problem id (also level1/3_A)");
  EXPECT_EQ(errors["level1/4_Bytes"], "not UTF-8");
}

TEST(Suite, TaskFolderUsesSidecarsAndHashesContent) {
  TempDir d;
  d.write("elementwise/relu.py", kTask);
  d.write("elementwise/relu.json", R"J({"difficulty": 2, "description": "relu on float32 (8,)"})J");
  d.write("norm/softmax.py", kTask);
  auto s = load_task_folder(d.path);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->tasks.size(), 2u);
  EXPECT_EQ(s->tasks[0].id, "norm/softmax");  // level 1 sorts first
  EXPECT_EQ(s->tasks[1].level, 2);
  EXPECT_EQ(s->tasks[1].description, "relu on float32 (8,)");
  const std::string before = s->content_hash;
  d.write("elementwise/relu.json", R"({"difficulty": 2, "description": "changed"})");
  EXPECT_NE(load_task_folder(d.path)->content_hash, before);  // a sidecar byte changes the hash
  EXPECT_EQ(load_task_folder(d.path)->content_hash, load_task_folder(d.path)->content_hash);
}

TEST(Suite, BundledTasksAllLoad) {
  auto s = load_task_folder(fs::path(MUSACODER_SOURCE_DIR) / "tasks");
  ASSERT_TRUE(s.ok());
  EXPECT_GE(s->tasks.size(), 28u);
  EXPECT_EQ(s->usable_count(), s->tasks.size());
}

TEST(Suite, ParsesIdLists) {
  EXPECT_EQ(*parse_id_list("1-3,7"), (std::set<int>{1, 2, 3, 7}));
  EXPECT_EQ(*parse_id_list("42"), (std::set<int>{42}));
  for (const char* bad : {"", "1,", "a", "3-1", "0", "1-", "-2"}) EXPECT_FALSE(parse_id_list(bad).ok()) << bad;
}

}  // namespace
}  // namespace musacoder::kernelbench
