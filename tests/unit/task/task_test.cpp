#include "mooreeval/task/task.h"

#include <gtest/gtest.h>

#include <set>

#include "core/files.h"

namespace musacoder::task {
namespace {

namespace fs = std::filesystem;
const fs::path kSource = MUSACODER_SOURCE_DIR;

const char* kTask = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x

def get_inputs():
    return [torch.randn(4)]

def get_init_inputs():
    return []
)";

TEST(Task, TrialsForDifficulty) {
  EXPECT_EQ(trials_for_difficulty(1), 8);
  EXPECT_EQ(trials_for_difficulty(2), 16);
  EXPECT_EQ(trials_for_difficulty(3), 32);
}

TEST(Task, SidecarAndModuleConstants) {
  auto dir = TempDir::create("mc-task-test-");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(write_file_atomic(dir->path() / "a.py", kTask).ok());
  ASSERT_TRUE(write_file_atomic(dir->path() / "a.json", R"({"difficulty": 2, "rtol": 0.01})").ok());
  auto a = load_task(dir->path() / "a.py");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->trials, 16);
  EXPECT_DOUBLE_EQ(a->rtol.value(), 0.01);
  EXPECT_FALSE(a->atol.has_value());

  ASSERT_TRUE(
      write_file_atomic(dir->path() / "b.py", std::string(kTask) + "MOOREEVAL_DIFFICULTY = 3\n").ok());
  auto b = load_task(dir->path() / "b.py");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->trials, 32);
}

TEST(Task, BadTasksAreClearErrors) {
  auto missing = load_task("/nonexistent/task.py");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  auto no_model = load_task(kSource / "tests/fixtures/bad_tasks/no_model.py");
  ASSERT_FALSE(no_model.ok());
  EXPECT_NE(no_model.status().message().find("class Model"), std::string::npos);

  auto no_inputs = load_task(kSource / "tests/fixtures/bad_tasks/no_get_inputs.py");
  ASSERT_FALSE(no_inputs.ok());
  EXPECT_NE(no_inputs.status().message().find("get_inputs"), std::string::npos);

  auto dir = TempDir::create("mc-task-test-");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(write_file_atomic(dir->path() / "bin.py", "\xFF\xFE class Model").ok());
  auto bin = load_task(dir->path() / "bin.py");
  ASSERT_FALSE(bin.ok());
  EXPECT_NE(bin.status().message().find("UTF-8"), std::string::npos);

  ASSERT_TRUE(write_file_atomic(dir->path() / "c.py", kTask).ok());
  ASSERT_TRUE(write_file_atomic(dir->path() / "c.json", "{not json").ok());
  EXPECT_FALSE(load_task(dir->path() / "c.py").ok());
  ASSERT_TRUE(write_file_atomic(dir->path() / "c.json", R"({"difficulty": 7})").ok());
  EXPECT_FALSE(load_task(dir->path() / "c.py").ok());
}

TEST(Task, BundledSuiteCoversTheCategories) {
  auto suite = load_suite(kSource / "tasks");
  ASSERT_TRUE(suite.ok()) << suite.status().to_string();
  EXPECT_GE(suite->size(), 24u);
  std::set<std::string> categories;
  for (const auto& t : *suite) {
    categories.insert(t.id.substr(0, t.id.find('/')));
    EXPECT_GE(t.trials, 8) << t.id;
    EXPECT_LE(t.trials, 32) << t.id;
  }
  for (const char* c : {"elementwise", "activation", "reduction", "norm", "matmul", "conv", "fusion"})
    EXPECT_TRUE(categories.count(c)) << c;
}

TEST(Task, ResolveByIdOrPath) {
  auto by_id = resolve_task("elementwise/add", kSource / "tasks");
  ASSERT_TRUE(by_id.ok()) << by_id.status().to_string();
  EXPECT_EQ(by_id->id, "elementwise/add");
  EXPECT_EQ(resolve_task("no/such", kSource / "tasks").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace musacoder::task
