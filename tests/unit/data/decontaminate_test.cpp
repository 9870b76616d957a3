// Canonical forms of task modules, decontamination, the journal.
#include <gtest/gtest.h>

#include <fstream>

#include "core/files.h"
#include "data/decontaminate.h"
#include "data/python_canon.h"
#include "data/synth_internal.h"

namespace musacoder::data {
namespace {

// KernelBench's level-1 ReLU problem, as that repository writes it.
const char* kKernelBenchRelu = R"PY(import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs a ReLU activation.
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies ReLU activation to the input tensor.
        """
        return torch.relu(x)

batch_size = 16
dim = 16384

def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]

def get_init_inputs():
    return []  # No special initialization inputs needed
)PY";

// The same computation in the synthesizer's layout.
const char* kOursRelu = R"PY(import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """relu on float32 input (16, 16384) -> (16, 16384)"""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = torch.relu(x)
        return x


def get_inputs():
    x = torch.randn(16, 16384)
    return [x]


def get_init_inputs():
    return []
)PY";

TEST(PythonCanon, SpellingIsNormalisedAway) {
  PythonCanon kb = canonicalize_task(kKernelBenchRelu), ours = canonicalize_task(kOursRelu);
  EXPECT_EQ(kb.canonical, ours.canonical);
  EXPECT_EQ(kb.canonical, "forward: torch . relu ( in0 ) |init: |inputs: [ torch . randn ( 16 , 16384 ) ] |init_inputs: [ ]");
}

TEST(PythonCanon, ComputationsAndShapesStillDiffer) {
  std::string other = kOursRelu;
  other.replace(other.find("torch.relu"), 10, "torch.tanh");
  EXPECT_NE(canonicalize_task(other).canonical, canonicalize_task(kOursRelu).canonical);
  std::string shape = kOursRelu;
  shape.replace(shape.rfind("16384)"), 5, "8192");
  EXPECT_NE(canonicalize_task(shape).canonical, canonicalize_task(kOursRelu).canonical);
  // Inlining keeps precedence: (a + b) * c is not a + b * c.
  const char* a = "class Model:\n    def forward(self, x, y):\n        z = x + y\n        return z * 2\n";
  const char* b = "class Model:\n    def forward(self, x, y):\n        return x + y * 2\n";
  EXPECT_NE(canonicalize_task(a).canonical, canonicalize_task(b).canonical);
  // Aliases and module attributes resolve.
  const char* m1 = "class Model(nn.Module):\n    def __init__(self):\n        self.l = nn.Linear(4, 2)\n"
                   "    def forward(self, x):\n        return torch.nn.functional.gelu(self.l(x))\n";
  const char* m2 = "class Model(nn.Module):\n    def __init__(self):\n        self.fc = torch.nn.Linear(4, 2)\n"
                   "    def forward(self, inp):\n        h = self.fc(inp)\n        return F.gelu(h)\n";
  EXPECT_EQ(canonicalize_task(m1).canonical, canonicalize_task(m2).canonical);
}

class TempSuite : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("decon_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "level1");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(TempSuite, FlagsCanonicalAndNgramOverlapOnly) {
  ASSERT_TRUE(write_file_atomic(dir_ / "level1/19_ReLU.py", kKernelBenchRelu).ok());
  auto d = Decontaminator::load(dir_, {});
  ASSERT_TRUE(d.ok()) << d.status().message();
  auto hit = d->check(kOursRelu);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->kind, "canonical");
  EXPECT_EQ(hit->suite_file, "level1/19_ReLU.py");
  std::string other = kOursRelu;
  other.replace(other.find("torch.relu(x)"), 13, "torch.sigmoid(x) * 2.0");
  EXPECT_FALSE(d->check(other).has_value());
  // Same shapes, a different first op: most 8-grams shared -> ngram at a low threshold only.
  std::string near = kOursRelu;
  near.replace(near.find("torch.relu"), 10, "torch.tanh");
  EXPECT_FALSE(d->check(near).has_value());
  DecontaminationOptions loose;
  loose.ngram_threshold = 0.5;
  auto hit2 = Decontaminator::load(dir_, loose)->check(near);
  ASSERT_TRUE(hit2.has_value());
  EXPECT_EQ(hit2->kind, "ngram");
  EXPECT_FALSE(Decontaminator::load(dir_ / "missing", {}).ok());
}

TEST_F(TempSuite, JournalDropsATornLastLineAndAppends) {
  const auto path = dir_ / "journal.jsonl";
  ASSERT_TRUE(write_file_atomic(path, "{\"index\":0,\"answers\":[]}\n{\"index\":1,\"answers\":[]}\n{\"index\":2,\"ans").ok());
  auto j = Journal::open(path);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->entries().size(), 2u);
  EXPECT_EQ(*read_file(path), "{\"index\":0,\"answers\":[]}\n{\"index\":1,\"answers\":[]}\n");
  ASSERT_TRUE(j->append({{"index", 2}, {"answers", nlohmann::json::array()}}).ok());
  EXPECT_EQ(Journal::open(path)->entries().size(), 3u);
}

TEST(BestAnswer, OkWithTheHighestSpeedup) {
  nlohmann::json a = nlohmann::json::array();
  a.push_back({{"verdict", {{"verdict", "wrong_answer"}, {"speedup", 9.0}}}});
  a.push_back({{"verdict", {{"verdict", "ok"}, {"speedup", 1.2}}}});
  a.push_back({{"verdict", {{"verdict", "ok"}, {"speedup", 1.7}}}});
  EXPECT_EQ(best_answer(a), 2);
  a[2]["verdict"]["verdict"] = "compile_error";
  EXPECT_EQ(best_answer(a), 1);
  EXPECT_EQ(best_answer(nlohmann::json::array()), -1);
}

}  // namespace
}  // namespace musacoder::data
