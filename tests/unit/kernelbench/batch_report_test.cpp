// The verifier's batch summary (mooreeval eval-batch): Pass@k over powers of two up to the smallest
// sample count, fast_p, Avg@k, geomean, infra_error left out of every metric, and the verdict table.
#include "kernelbench/batch_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace musacoder::kernelbench {
namespace {

eval::Verdict verdict(const std::string& task, eval::VerdictClass c, std::optional<double> speedup = {}) {
  eval::Verdict v;
  v.task_id = task;
  v.verdict = c;
  v.speedup = speedup;
  v.reward.total = c == eval::VerdictClass::kOk ? 1.0 : 0.2;
  v.trials = 8;
  v.passed = c == eval::VerdictClass::kOk ? 8 : 0;
  return v;
}

TEST(BatchReport, HandComputedMetrics) {
  using VC = eval::VerdictClass;
  // Task a: 2 samples, 1 correct at 2.0x.  Task b: 2 samples, both correct (0.5x, 4.0x), plus one
  // infra_error that must not count.
  std::vector<eval::Verdict> v = {verdict("a", VC::kOk, 2.0), verdict("a", VC::kWrongAnswer),
                                  verdict("b", VC::kOk, 0.5), verdict("b", VC::kOk, 4.0),
                                  verdict("b", VC::kInfraError)};
  nlohmann::json s = summarize_batch(v);
  EXPECT_EQ(s["samples"], 5);
  EXPECT_EQ(s["problems"], 2);
  EXPECT_EQ(s["infra_errors"], 1);
  EXPECT_EQ(s["verdicts"]["ok"], 3);
  EXPECT_EQ(s["verdicts"]["infra_error"], 1);
  // pass@1: a 1/2, b 2/2 -> 0.75; pass@2: a 1, b 1 -> 1.
  EXPECT_DOUBLE_EQ(s["pass_at_k"]["1"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(s["pass_at_k"]["2"].get<double>(), 1.0);
  EXPECT_FALSE(s["pass_at_k"].contains("4"));
  EXPECT_DOUBLE_EQ(s["avg_at_k"].get<double>(), 0.75);
  // fast_1: a 1/2, b 1/2 -> 0.5; fast_2: a 0 (2.0 is not > 2), b 1/2 -> 0.25.
  EXPECT_DOUBLE_EQ(s["fast_p"]["1"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(s["fast_p"]["2"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(s["fast_p"]["0"].get<double>(), 0.75);
  // geomean over correct samples: (2 * 0.5 * 4)^(1/3) = 4^(1/3).
  EXPECT_NEAR(s["geomean_speedup"].get<double>(), std::cbrt(4.0), 1e-12);
  // mean reward over scored samples: (1 + 0.2 + 1 + 1) / 4.
  EXPECT_DOUBLE_EQ(s["mean_reward"].get<double>(), 0.8);
}

TEST(BatchReport, OnlyInfraErrorsGiveNoMetrics) {
  nlohmann::json s = summarize_batch({verdict("a", eval::VerdictClass::kInfraError)});
  EXPECT_EQ(s["problems"], 0);
  EXPECT_FALSE(s.contains("pass_at_k"));
}

TEST(BatchReport, VerdictTableHasOneRowPerVerdictAndNoNewlinesInMessages) {
  auto ok = verdict("a", eval::VerdictClass::kOk, 1.5);
  auto bad = verdict("a", eval::VerdictClass::kCompileError);
  bad.message = "line one\nline two";
  std::string t = verdict_table({{"a#0", &ok}, {"a#1", &bad}});
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 4);  // header, rule, two rows
  EXPECT_NE(t.find("1.50x"), std::string::npos);
  EXPECT_NE(t.find("line one line two"), std::string::npos);
}

TEST(BatchReport, PathTextEscapesInvalidUtf8) {
  EXPECT_EQ(path_text(std::filesystem::path("a/\xff" "b")), "a/\\xFFb");
  EXPECT_EQ(safe_dump(nlohmann::json("\xc3\x28")), "\"\xEF\xBF\xBD(\"");
}

}  // namespace
}  // namespace musacoder::kernelbench
