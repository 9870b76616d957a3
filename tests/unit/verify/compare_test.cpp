#include "mooreeval/verify/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

namespace musacoder::verify {
namespace {

TensorData t(std::vector<double> v, std::vector<int64_t> shape = {}, std::string dtype = "float32") {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return TensorData::from_values(dtype, shape, v);
}

// A 1-d tensor of `dtype` stored as T (raw bit patterns for the 16-bit floats).
template <typename T>
TensorData stored(std::string dtype, StorageType storage, std::vector<T> v) {
  auto owned = std::make_shared<const std::vector<T>>(std::move(v));
  return TensorData(std::move(dtype), {static_cast<int64_t>(owned->size())}, storage,
                    reinterpret_cast<const std::byte*>(owned->data()), owned->size(), owned);
}

// The same tensor with every element widened into float64 storage.
TensorData as_float64(const TensorData& x) {
  std::vector<double> v;
  for (std::size_t i = 0; i < x.numel(); ++i) v.push_back(x.value(i));
  return TensorData::from_values(x.dtype(), x.shape(), v);
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

// Every pairing of NaN, +Inf, -Inf and a finite value: only NaN/NaN and equal infinities pass,
// and non-finite elements never enter the error maxima.
TEST(Compare, NonFiniteRules) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  const std::vector<double> kinds = {nan, inf, -inf, 1.0};
  for (double r : kinds) {
    for (double c : kinds) {
      const bool expect_pass = (std::isnan(r) && std::isnan(c)) || r == c;
      auto rep = one(t({r, 0.5}), t({c, 0.5}));
      EXPECT_EQ(rep.passed, expect_pass ? 1 : 0) << r << " vs " << c;
      EXPECT_EQ(rep.max_abs_error, 0.0) << r << " vs " << c;
      EXPECT_EQ(rep.max_rel_error, 0.0) << r << " vs " << c;
      // Counted as NaN/Inf only where the candidate's value is not finite.
      EXPECT_EQ(rep.first_failure.find("NaN/Inf") != std::string::npos, !expect_pass && !std::isfinite(c))
          << r << " vs " << c << ": " << rep.first_failure;
    }
  }
  // Finite values that overflow their difference still fail, with an infinite error.
  auto big = one(t({-1e308}, {}, "float64"), t({1e308}, {}, "float64"));
  EXPECT_EQ(big.passed, 0);
  EXPECT_EQ(big.max_abs_error, inf);
}

TEST(Compare, MismatchMessage) {
  auto r = one(t({1, 2, 3, 4}, {2, 2}), t({1, 2.5, 3, -4}, {2, 2}));
  EXPECT_EQ(r.first_failure, "trial 0: 2 of 4 elements mismatch; first at flat index 1: got 2.5, expected 2");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto two = compare_outputs({{t({1})}, {t({1}), t({5, 6})}}, {{t({1})}, {t({1}), t({5, nan})}}, {});
  EXPECT_EQ(two.passed, 1);
  EXPECT_EQ(two.first_failure,
            "trial 1: output 1: 1 of 2 elements mismatch (1 NaN/Inf); first at flat index 1: got nan, "
            "expected 6");
  EXPECT_EQ(one(t({1, 2}), t({1, 2, 3})).first_failure, "trial 0: shape (3,), expected (2,)");
  EXPECT_EQ(one(t({1}), t({1}, {}, "bfloat16")).first_failure, "trial 0: dtype bfloat16, expected float32");
  EXPECT_EQ(compare_outputs({{t({1}), t({2})}}, {{t({1})}}, {}).first_failure,
            "trial 0: returned 1 tensors, expected 2");
  EXPECT_EQ(compare_outputs({{t({1})}}, {}, {}).first_failure, "trial 0: no output for this trial");
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
  EXPECT_EQ(one(stored<int8_t>("int8", StorageType::kInt8, {3, -7}),
                stored<int8_t>("int8", StorageType::kInt8, {3, -6}), {2, 2})
                .passed,
            0);
  EXPECT_EQ(one(stored<uint8_t>("bool", StorageType::kBool, {0, 1}),
                stored<uint8_t>("bool", StorageType::kBool, {0, 1}))
                .passed,
            1);
}

// The loop over raw storage gives exactly the report of the same values widened to float64
// first, for every storage type, including when the two sides are stored differently.
TEST(Compare, EveryStorageTypeMatchesTheWidenedComparison) {
  const std::vector<std::pair<TensorData, TensorData>> cases = {
      {stored<float>("float32", StorageType::kFloat32, {1.0f, 2.0f, -3.5f, NAN, INFINITY}),
       stored<float>("float32", StorageType::kFloat32, {1.0f, 2.001f, -3.0f, NAN, INFINITY})},
      {stored<double>("float64", StorageType::kFloat64, {1e-20, 2.0, 5.0}),
       stored<double>("float64", StorageType::kFloat64, {2e-20, 2.0005, 4.0})},
      // float16 bits: 1.0, 2.0, -inf, NaN, smallest subnormal vs 1.0009765625, 2.0, -inf, 1.0, 0
      {stored<uint16_t>("float16", StorageType::kFloat16, {0x3c00, 0x4000, 0xfc00, 0x7e00, 0x0001}),
       stored<uint16_t>("float16", StorageType::kFloat16, {0x3c01, 0x4000, 0xfc00, 0x3c00, 0x0000})},
      // bfloat16 bits: 1.0, 1.5, -2.0, +inf vs 1.0078125, 1.5, -2.0, -inf
      {stored<uint16_t>("bfloat16", StorageType::kBFloat16, {0x3f80, 0x3fc0, 0xc000, 0x7f80}),
       stored<uint16_t>("bfloat16", StorageType::kBFloat16, {0x3f81, 0x3fc0, 0xc000, 0xff80})},
      {stored<int64_t>("int64", StorageType::kInt64, {int64_t{1} << 40, -5}),
       stored<int64_t>("int64", StorageType::kInt64, {int64_t{1} << 40, -6})},
      {stored<int32_t>("int32", StorageType::kInt32, {7, -2147483647 - 1}),
       stored<int32_t>("int32", StorageType::kInt32, {7, -2147483647 - 1})},
      {stored<int16_t>("int16", StorageType::kInt16, {-32768, 3}),
       stored<int16_t>("int16", StorageType::kInt16, {-32768, 4})},
      {stored<uint8_t>("uint8", StorageType::kUInt8, {255, 0}),
       stored<uint8_t>("uint8", StorageType::kUInt8, {254, 0})},
      // Equal dtypes, different storage (a hand-made file): compared by value.
      {stored<float>("float32", StorageType::kFloat32, {1.5f, 2.0f}),
       stored<double>("float32", StorageType::kFloat64, {1.5, 2.5})},
  };
  for (const auto& [r, c] : cases) {
    for (Tolerance tol : {Tolerance{}, Tolerance{0.1, 0.1}}) {
      const auto got = one(r, c, tol);
      const auto want = one(as_float64(r), as_float64(c), tol);
      EXPECT_EQ(got.passed, want.passed) << r.dtype();
      EXPECT_EQ(got.max_abs_error, want.max_abs_error) << r.dtype();
      EXPECT_EQ(got.max_rel_error, want.max_rel_error) << r.dtype();
      EXPECT_EQ(got.first_failure, want.first_failure) << r.dtype();
    }
  }
  // Spot checks that the typed loops do see the differences.
  EXPECT_EQ(one(cases[2].first, cases[2].second).first_failure,
            "trial 0: 1 of 5 elements mismatch; first at flat index 3: got 1, expected nan");
  EXPECT_EQ(one(cases[3].first, cases[3].second).first_failure,
            "trial 0: 2 of 4 elements mismatch (1 NaN/Inf); first at flat index 0: got 1.00781, expected 1");
  EXPECT_EQ(one(cases[8].first, cases[8].second).first_failure,
            "trial 0: 1 of 2 elements mismatch; first at flat index 1: got 2.5, expected 2");
}

}  // namespace
}  // namespace musacoder::verify
