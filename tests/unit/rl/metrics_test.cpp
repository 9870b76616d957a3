#include "rl/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace musacoder::rl {
namespace {

double pass(std::size_t n, std::size_t c, std::size_t k) {
  auto r = pass_at_k(n, c, k);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : NAN;
}

// Exact 1 − C(n−c,k)/C(n,k) with doubles, for small n.
double binomial(std::size_t n, std::size_t k) {
  if (k > n) return 0.0;
  double b = 1.0;
  for (std::size_t i = 1; i <= k; ++i) b = b * static_cast<double>(n - k + i) / static_cast<double>(i);
  return b;
}

TEST(PassAtK, HandComputed) {
  EXPECT_NEAR(pass(10, 3, 1), 0.3, 1e-12);
  EXPECT_NEAR(pass(5, 2, 3), 0.9, 1e-12);  // 1 − C(3,3)/C(5,3) = 1 − 1/10
  EXPECT_NEAR(pass(8, 1, 8), 1.0, 1e-12);
  EXPECT_EQ(pass(8, 0, 4), 0.0);
  EXPECT_EQ(pass(4, 4, 1), 1.0);
  EXPECT_NEAR(pass(4, 1, 2), 0.5, 1e-12);  // 1 − C(3,2)/C(4,2) = 1 − 3/6
}

TEST(PassAtK, MatchesBinomialFormulaAndIsMonotone) {
  for (std::size_t n = 1; n <= 20; ++n) {
    for (std::size_t c = 0; c <= n; ++c) {
      for (std::size_t k = 1; k <= n; ++k) {
        const double expected = 1.0 - binomial(n - c, k) / binomial(n, k);
        EXPECT_NEAR(pass(n, c, k), expected, 1e-9) << n << " " << c << " " << k;
        if (k > 1) {
          EXPECT_GE(pass(n, c, k) + 1e-12, pass(n, c, k - 1));
        }
        if (c > 0) {
          EXPECT_GE(pass(n, c, k) + 1e-12, pass(n, c - 1, k));
        }
      }
    }
  }
  // Large n stays finite and accurate: n = 1000, c = 1, k = 1 → 0.001.
  EXPECT_NEAR(pass(1000, 1, 1), 0.001, 1e-12);
}

TEST(PassAtK, Errors) {
  EXPECT_FALSE(pass_at_k(5, 2, 0).ok());
  EXPECT_FALSE(pass_at_k(5, 2, 6).ok());
  EXPECT_FALSE(pass_at_k(5, 6, 1).ok());
}

const std::vector<SampleOutcome> kSamples = {{true, 2.0}, {true, 0.8}, {false, 5.0}, {true, 1.5}};

TEST(SampleMetrics, HandComputed) {
  EXPECT_DOUBLE_EQ(avg_at_k(kSamples).value(), 0.75);
  EXPECT_DOUBLE_EQ(fast_p(kSamples, 1.0).value(), 0.5);   // 2.0 and 1.5; the incorrect 5.0 does not count
  EXPECT_DOUBLE_EQ(fast_p(kSamples, 0.0).value(), 0.75);  // fast_0 = correctness
  EXPECT_DOUBLE_EQ(fast_p(kSamples, 1.5).value(), 0.25);  // strictly greater
  EXPECT_DOUBLE_EQ(faster_than_reference_share(kSamples).value(), 0.5);
  EXPECT_NEAR(geomean_speedup(kSamples).value(), std::cbrt(2.0 * 0.8 * 1.5), 1e-12);  // 1.3389
}

TEST(SampleMetrics, Errors) {
  EXPECT_FALSE(avg_at_k({}).ok());
  EXPECT_FALSE(fast_p({}, 1.0).ok());
  EXPECT_FALSE(geomean_speedup(std::vector<SampleOutcome>{{false, 1.0}}).ok());
  EXPECT_FALSE(geomean_speedup(std::vector<SampleOutcome>{{true, 0.0}}).ok());
  EXPECT_FALSE(fast_p(std::vector<SampleOutcome>{{true, NAN}}, 1.0).ok());
  EXPECT_TRUE(fast_p(std::vector<SampleOutcome>{{false, NAN}}, 1.0).ok());  // speedup unread when wrong
}

TEST(Summarize, AveragesOverProblems) {
  const std::vector<std::vector<SampleOutcome>> problems = {
      {{true, 2.0}, {false, 0.0}},  // pass@1 0.5, avg 0.5, fast_1 0.5
      {{true, 0.5}, {true, 0.5}},   // pass@1 1,   avg 1,   fast_1 0
  };
  auto s = summarize(problems, {.k = 1, .p = 1.0});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s.value().problems, 2u);
  EXPECT_DOUBLE_EQ(s.value().pass_at_k, 0.75);
  EXPECT_DOUBLE_EQ(s.value().avg_at_k, 0.75);
  EXPECT_DOUBLE_EQ(s.value().fast_p, 0.25);
  EXPECT_DOUBLE_EQ(s.value().faster_share, 0.25);
  ASSERT_TRUE(s.value().geomean_speedup.has_value());
  EXPECT_NEAR(*s.value().geomean_speedup, std::cbrt(2.0 * 0.5 * 0.5), 1e-12);
  auto k2 = summarize(problems, {.k = 2});
  ASSERT_TRUE(k2.ok());
  EXPECT_DOUBLE_EQ(k2.value().pass_at_k, 1.0);
  EXPECT_FALSE(summarize(problems, {.k = 3}).ok());
  EXPECT_FALSE(summarize({}, {}).ok());
  auto none = summarize(std::vector<std::vector<SampleOutcome>>{{{false, 0.0}}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.value().geomean_speedup.has_value());
}

}  // namespace
}  // namespace musacoder::rl
