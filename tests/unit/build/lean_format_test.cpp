// The lean headers' message formatting (mooreeval_lean::str, behind TORCH_CHECK and the
// dispatch macros' errors) must write every argument exactly as std::ostream does — which is
// how torch's c10::str writes it — although the lean headers avoid <sstream>.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "mooreeval_lean/tensor.h"

// The shim (built against the real torch) defines the lean ABI; this test links without it,
// so the ABI functions the formatting calls get stand-ins with torch's spellings.
extern "C" const char* mc_lean_scalar_type_name(int8_t dtype) {
  return dtype == static_cast<int8_t>(c10::ScalarType::Float) ? "Float" : "Half";
}
extern "C" const char* mc_lean_type_meta_name(int8_t dtype) {
  return dtype == static_cast<int8_t>(c10::ScalarType::Float) ? "float" : "c10::Half";
}

namespace {

template <typename... Args>
std::string streamed(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}

// The lean message as a std::string, for comparisons.
template <typename... Args>
std::string lean(const Args&... args) {
  return mooreeval_lean::str(args...).c_str();
}

#define EXPECT_SAME_AS_OSTREAM(...) EXPECT_EQ(lean(__VA_ARGS__), streamed(__VA_ARGS__))

TEST(LeanFormat, IntegersOfEveryWidthAndSign) {
  EXPECT_SAME_AS_OSTREAM(0, -1, 42);
  EXPECT_SAME_AS_OSTREAM(std::numeric_limits<int64_t>::min(), " ", std::numeric_limits<int64_t>::max());
  EXPECT_SAME_AS_OSTREAM(std::numeric_limits<uint64_t>::max(), std::size_t{7});
  EXPECT_SAME_AS_OSTREAM(static_cast<short>(-3), static_cast<unsigned short>(65535), 7u, -7L, 7UL, -7LL,
                         7ULL);
}

TEST(LeanFormat, FloatingPointAsDefaultStreamFlags) {
  for (double v : {0.0, -0.0, 0.1, 1.0 / 3, 1.5, 100000.0, 1000000.0, 1e10, 1e-5, 123456789.0, -2.5e-300,
                   std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::denorm_min()})
    EXPECT_SAME_AS_OSTREAM(v, " ", static_cast<float>(v), " ", static_cast<long double>(v));
}

TEST(LeanFormat, CharactersBooleansAndStrings) {
  EXPECT_SAME_AS_OSTREAM('"', 'x', static_cast<int8_t>(65), static_cast<uint8_t>(66), true, false);
  EXPECT_SAME_AS_OSTREAM("add: ", std::string("a and b"), std::string_view(" must match"));
  char buffer[] = "mutable";
  EXPECT_SAME_AS_OSTREAM(buffer);
  EXPECT_EQ(lean(), "");
}

enum LegacyEnum { kFirst, kSecond = 5 };

TEST(LeanFormat, UnscopedEnumsPrintTheirValue) {
  EXPECT_SAME_AS_OSTREAM(kSecond, ":", kFirst);
}

TEST(LeanFormat, TorchTypesAsC10PrintsThem) {
  const std::vector<int64_t> shape = {2, 3, 4};
  const c10::IntArrayRef sizes(shape);
  EXPECT_EQ(lean("got ", sizes), "got [2, 3, 4]");
  EXPECT_SAME_AS_OSTREAM(sizes, c10::IntArrayRef());
  EXPECT_EQ(lean(c10::Device(c10::kCUDA, 1), " ", c10::Device(c10::kCPU)), "cuda:1 cpu");
  EXPECT_SAME_AS_OSTREAM(c10::Device(c10::kCUDA, 0), c10::Device(c10::kCUDA));
  EXPECT_EQ(lean(c10::kFloat), "Float");
  EXPECT_SAME_AS_OSTREAM(c10::kFloat, caffe2::TypeMeta(c10::kHalf));
}

TEST(LeanFormat, LongMessagesGrowTheBuffer) {
  const std::string part(100, 'x');
  std::string expected;
  mooreeval_lean::Message m;
  for (int i = 0; i < 50; ++i) {
    expected += part + std::to_string(i);
    mooreeval_lean::append(m, part);
    mooreeval_lean::append(m, i);
  }
  EXPECT_EQ(m.size(), expected.size());
  EXPECT_EQ(std::string(m.c_str()), expected);
  mooreeval_lean::Message moved = std::move(m);
  EXPECT_EQ(std::string(moved.c_str()), expected);
  EXPECT_TRUE(m.empty());
  EXPECT_STREQ(m.c_str(), "");
}

TEST(LeanFormat, CheckMessageDefaultsAsTorchCheck) {
  EXPECT_STREQ(mooreeval_lean::check_message("a > 0", mooreeval_lean::str("a is ", -1)).c_str(), "a is -1");
  EXPECT_EQ(
      std::string(mooreeval_lean::check_message("a > 0", mooreeval_lean::str()).c_str()),
      "Expected a > 0 to be true, but got false.  (Could this error message be improved?  If so, please "
      "report an enhancement request to PyTorch.)");
}

}  // namespace
