// The front door end to end on cpu: evaluate, evaluate_batch (text and file submissions) and the
// submission queue (callback and future forms) give the verdicts the broken-candidate manifest expects.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>

#include "core/files.h"
#include "mooreeval/mooreeval.h"

namespace musacoder::mooreeval {
namespace {

const std::filesystem::path kSource = MUSACODER_SOURCE_DIR;
const std::filesystem::path kFixtures = kSource / "tests/fixtures/candidates";

Options cpu_options() {
  Options o;
  o.concurrency.workers = 2;
  o.deadlines.max_build = std::chrono::seconds(400);
  o.deadlines.max_run = std::chrono::seconds(120);
  o.timing.warmup_iters = 2;
  o.timing.benchmark_iters = 5;
  o.runner.runner_dir = kSource / "python";
  o.compile.cache_dir = std::filesystem::path(MUSACODER_BINARY_DIR) / "test-build-cache";
  return o;
}

class FrontDoor : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto e = Evaluator::create(cpu_options());
    ASSERT_TRUE(e.ok()) << e.status().message();
    evaluator_ = std::move(*e).release();
    auto t = load_task(kSource / "tasks/elementwise/add.py", "elementwise/add");
    ASSERT_TRUE(t.ok()) << t.status().message();
    task_ = new Task(*t);
  }
  static void TearDownTestSuite() {
    delete evaluator_;
    delete task_;
  }
  static std::string fixture(const char* name) {
    auto text = read_file(kFixtures / name);
    EXPECT_TRUE(text.ok());
    return text.ok() ? *text : "";
  }
  static Evaluator* evaluator_;
  static Task* task_;
};
Evaluator* FrontDoor::evaluator_ = nullptr;
Task* FrontDoor::task_ = nullptr;

TEST_F(FrontDoor, EvaluateOne) {
  Verdict v = evaluator_->evaluate(*task_, fixture("correct_cpu.py"));
  EXPECT_EQ(v.verdict, VerdictClass::kOk) << v.message;
  EXPECT_EQ(to_json(v)["verdict"], "ok");
}

TEST_F(FrontDoor, BatchKeepsOrderAndReadsFiles) {
  std::vector<Submission> batch = {{*task_, fixture("wrong_math_cpu.py"), {}},
                                   {*task_, "", kFixtures / "syntax_error.py"},
                                   {*task_, "", kFixtures / "no_such_file.py"}};
  std::atomic<int> calls{0};
  auto verdicts = evaluator_->evaluate_batch(batch, [&](std::size_t, const Verdict&) { ++calls; });
  ASSERT_EQ(verdicts.size(), 3u);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(verdicts[0].verdict, VerdictClass::kWrongAnswer) << verdicts[0].message;
  EXPECT_EQ(verdicts[1].verdict, VerdictClass::kFormatError) << verdicts[1].message;
  EXPECT_EQ(verdicts[2].verdict, VerdictClass::kFormatError) << verdicts[2].message;
}

TEST_F(FrontDoor, SubmitWhileGenerating) {
  std::mutex mu;
  std::vector<std::string> seen;
  for (const char* name : {"correct_cpu.py", "wrong_math_cpu.py"})
    evaluator_->submit({*task_, fixture(name), {}}, [&, name](Verdict v) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(std::string(name) + "=" + verdict_name(v.verdict));
    });
  std::future<Verdict> later = evaluator_->submit(Submission{*task_, fixture("syntax_error.py"), {}});
  evaluator_->wait_idle();
  EXPECT_EQ(later.get().verdict, VerdictClass::kFormatError);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"correct_cpu.py=ok", "wrong_math_cpu.py=wrong_answer"}));
}

}  // namespace
}  // namespace musacoder::mooreeval
