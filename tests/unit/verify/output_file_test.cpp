#include "verify/output_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/files.h"

namespace musacoder::verify {
namespace {

template <typename T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_str(std::string& s, const std::string& v) {
  put<uint32_t>(s, static_cast<uint32_t>(v.size()));
  s += v;
}

// One tensor's header (dtype, shape, numel) and its storage name; the caller appends data.
void tensor_header(std::string& s, const std::string& dtype, std::vector<int64_t> shape, uint64_t numel,
                   const std::string& storage) {
  put_str(s, dtype);
  put<uint32_t>(s, static_cast<uint32_t>(shape.size()));
  for (int64_t d : shape) put<int64_t>(s, d);
  put<uint64_t>(s, numel);
  put_str(s, storage);
}

std::string one_tensor_file(uint64_t numel_field, const std::string& storage = "float32") {
  std::string s = "MCOUT002";
  put<uint32_t>(s, 1);  // trials
  put<uint32_t>(s, 1);  // tensors
  tensor_header(s, "float32", {1, 2}, numel_field, storage);
  put<float>(s, 1.5f);
  put<float>(s, -2.0f);
  return s;
}

TEST(OutputFile, RoundTripAndMalformedFiles) {
  auto dir = TempDir::create("mc-out-test-");
  ASSERT_TRUE(dir.ok());
  auto p = dir->path() / "o.bin";
  ASSERT_TRUE(write_file_atomic(p, one_tensor_file(2)).ok());
  auto r = read_output_file(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0][0].dtype, "float32");
  EXPECT_EQ((*r)[0][0].shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ((*r)[0][0].values, (std::vector<double>{1.5, -2.0}));

  ASSERT_TRUE(write_file_atomic(p, one_tensor_file(3)).ok());  // numel disagrees with shape
  EXPECT_FALSE(read_output_file(p).ok());
  std::string truncated = one_tensor_file(2);
  truncated.resize(truncated.size() - 4);
  ASSERT_TRUE(write_file_atomic(p, truncated).ok());
  EXPECT_FALSE(read_output_file(p).ok());
  ASSERT_TRUE(write_file_atomic(p, "garbage").ok());
  EXPECT_FALSE(read_output_file(p).ok());
  ASSERT_TRUE(write_file_atomic(p, one_tensor_file(2, "complex64")).ok());  // no such storage type
  auto unknown = read_output_file(p);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("complex64"), std::string::npos);
}

// Each tensor travels in its own dtype's bytes; the reader widens every storage type exactly.
TEST(OutputFile, ReadsEveryStorageType) {
  std::string s = "MCOUT002";
  put<uint32_t>(s, 1);
  put<uint32_t>(s, 6);
  tensor_header(s, "bfloat16", {2}, 2, "bfloat16");
  put<uint16_t>(s, 0x3fc0);  // 1.5
  put<uint16_t>(s, 0xc000);  // -2
  tensor_header(s, "float16", {4}, 4, "float16");
  put<uint16_t>(s, 0x3e00);  // 1.5
  put<uint16_t>(s, 0x0001);  // smallest subnormal, 2^-24
  put<uint16_t>(s, 0xfc00);  // -inf
  put<uint16_t>(s, 0x7e00);  // NaN
  tensor_header(s, "float64", {}, 1, "float64");
  put<double>(s, 0.1);
  tensor_header(s, "int64", {1}, 1, "int64");
  put<int64_t>(s, -(int64_t{1} << 40));
  tensor_header(s, "bool", {3}, 3, "bool");
  s += std::string("\x01\x00\x01", 3);
  tensor_header(s, "complex64", {0, 3}, 0, "float64");  // widened by the writer; empty here
  auto dir = TempDir::create("mc-out-test-");
  ASSERT_TRUE(dir.ok());
  auto p = dir->path() / "o.bin";
  ASSERT_TRUE(write_file_atomic(p, s).ok());
  auto r = read_output_file(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto& t = (*r)[0];
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0].values, (std::vector<double>{1.5, -2.0}));
  EXPECT_EQ(t[1].values[0], 1.5);
  EXPECT_EQ(t[1].values[1], std::ldexp(1.0, -24));
  EXPECT_EQ(t[1].values[2], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(t[1].values[3]));
  EXPECT_EQ(t[2].values, (std::vector<double>{0.1}));
  EXPECT_TRUE(t[2].shape.empty());
  EXPECT_EQ(t[3].values[0], -1099511627776.0);
  EXPECT_EQ(t[4].values, (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(t[5].dtype, "complex64");
  EXPECT_TRUE(t[5].values.empty());
}

}  // namespace
}  // namespace musacoder::verify
