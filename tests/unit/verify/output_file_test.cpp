#include "verify/output_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/files.h"

namespace musacoder::verify {
namespace {

template <typename T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string one_tensor_file(uint64_t numel_field) {
  std::string s = "MCOUT001";
  put<uint32_t>(s, 1);  // trials
  put<uint32_t>(s, 1);  // tensors
  put<uint32_t>(s, 7);
  s += "float32";
  put<uint32_t>(s, 2);
  put<int64_t>(s, 1);
  put<int64_t>(s, 2);
  put<uint64_t>(s, numel_field);
  put<double>(s, 1.5);
  put<double>(s, -2.0);
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
}

}  // namespace
}  // namespace musacoder::verify
