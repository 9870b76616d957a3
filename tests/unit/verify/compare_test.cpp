#include "verify/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace musacoder::verify {
namespace {

TensorData t(std::vector<double> v, std::vector<int64_t> shape = {}, std::string dtype = "float32") {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return {dtype, shape, v};
}

NumericReport one(const TensorData& ref, const TensorData& cand, Tolerance tol = {}) {
  return compare_outputs({{ref}}, {{cand}}, tol);
}

TEST(Compare, AllcloseBoundary) {
  // |c - r| <= atol + rtol*|r|: 1e-3 + 1e-3*10 = 0.011
  EXPECT_EQ(one(t({10.0}), t({10.0109})).passed, 1);
  EXPECT_EQ(one(t({10.0}), t({10.0111})).passed, 0);
  auto r = one(t({2.0, 4.0}), t({2.5, 4.0}));
  EXPECT_DOUBLE_EQ(r.max_abs_error, 0.5);
  EXPECT_DOUBLE_EQ(r.max_rel_error, 0.25);
  EXPECT_NE(r.first_failure.find("1 of 2"), std::string::npos);
}

TEST(Compare, NanNeverPassesUnlessTheReferenceIsNan) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto r = one(t({1.0, 2.0}), t({1.0, nan}));
  EXPECT_EQ(r.passed, 0);
  EXPECT_NE(r.first_failure.find("NaN"), std::string::npos);
  EXPECT_EQ(one(t({nan}), t({nan})).passed, 1);
  EXPECT_EQ(one(t({INFINITY}), t({INFINITY})).passed, 1);
  EXPECT_EQ(one(t({1.0}), t({INFINITY})).passed, 0);
}

TEST(Compare, ShapeDtypeAndCountMismatches) {
  EXPECT_NE(one(t({1, 2, 3, 4}, {2, 2}), t({1, 2, 3, 4}, {4})).first_failure.find("shape (4,)"),
            std::string::npos);
  EXPECT_NE(one(t({1}), t({1}, {}, "float64")).first_failure.find("dtype"), std::string::npos);
  auto r = compare_outputs({{t({1}), t({2})}}, {{t({1})}}, {});
  EXPECT_EQ(r.passed, 0);
  auto missing = compare_outputs({{t({1})}, {t({1})}}, {{t({1})}}, {});
  EXPECT_EQ(missing.trials, 2);
  EXPECT_EQ(missing.passed, 1);
  EXPECT_DOUBLE_EQ(missing.pass_fraction(), 0.5);
}

TEST(Compare, IntegersMustMatchExactly) {
  EXPECT_EQ(one(t({3}, {}, "int64"), t({3}, {}, "int64")).passed, 1);
  EXPECT_EQ(one(t({3}, {}, "int64"), t({4}, {}, "int64"), {0.5, 0.5}).passed, 0);
}

}  // namespace
}  // namespace musacoder::verify
