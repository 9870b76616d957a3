#include "mooreeval/verify/output_file.h"

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

std::vector<double> values(const TensorData& t) {
  std::vector<double> v;
  for (std::size_t i = 0; i < t.numel(); ++i) v.push_back(t.value(i));
  return v;
}

// The float16 widening of the reader before it kept elements in their stored type, as the reference.
double float16_by_ldexp(uint16_t bits) {
  const int sign = (bits >> 15) ? -1 : 1;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 0x1f)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

class OutputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::create("mc-out-test-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(*d));
  }
  std::filesystem::path write(const std::string& bytes, const std::string& name = "o.bin") {
    auto p = dir_->path() / name;
    EXPECT_TRUE(write_file_atomic(p, bytes).ok());
    return p;
  }
  std::optional<TempDir> dir_;
};

// MCOUT003, what the runner writes: a header with the trial count, and trial t in <path>.<t>.
TEST_F(OutputFile, TrialsInFilesOfTheirOwn) {
  std::string header = "MCOUT003";
  put<uint32_t>(header, 2);
  for (int t = 0; t < 2; ++t) {
    std::string trial;
    put<uint32_t>(trial, 1);
    tensor_header(trial, "float32", {2}, 2, "float32");
    put<float>(trial, 1.0f + t);
    put<float>(trial, -3.0f);
    write(trial, "o.bin." + std::to_string(t));
  }
  auto p = write(header);
  auto r = read_output_file(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ(values((*r)[0][0]), (std::vector<double>{1.0, -3.0}));
  EXPECT_EQ(values((*r)[1][0]), (std::vector<double>{2.0, -3.0}));

  std::filesystem::remove(dir_->path() / "o.bin.1");  // a missing trial file
  EXPECT_EQ(read_output_file(p).status().code(), StatusCode::kNotFound);
  write(header + "x", "o.bin");  // the header holds nothing but the count
  EXPECT_EQ(read_output_file(p).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(OutputFile, RoundTripAndMalformedFiles) {
  auto p = write(one_tensor_file(2));
  auto r = read_output_file(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0][0].dtype(), "float32");
  EXPECT_EQ((*r)[0][0].shape(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ((*r)[0][0].storage(), StorageType::kFloat32);
  EXPECT_EQ(values((*r)[0][0]), (std::vector<double>{1.5, -2.0}));

  write(one_tensor_file(3));  // numel disagrees with shape
  EXPECT_EQ(read_output_file(p).status().message(), p.string() + ": element count does not match the shape");
  std::string truncated = one_tensor_file(2);
  truncated.resize(truncated.size() - 4);
  write(truncated);
  EXPECT_FALSE(read_output_file(p).ok());
  write("garbage");
  EXPECT_EQ(read_output_file(p).status().message(), p.string() + ": not a MooreEval output file");
  write(one_tensor_file(2, "complex64"));  // no such storage type
  auto unknown = read_output_file(p);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("complex64"), std::string::npos);
  write(one_tensor_file(2) + "x");
  EXPECT_EQ(read_output_file(p).status().message(), p.string() + ": trailing bytes");
}

TEST_F(OutputFile, FilesThatCannotBeMapped) {
  auto empty = read_output_file(write(""));
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);
  auto missing = read_output_file(dir_->path() / "nothing.bin");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto directory = read_output_file(dir_->path());
  EXPECT_EQ(directory.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(directory.status().message().find("not a regular file"), std::string::npos);
}

// Every proper prefix of a valid file is an error (never a crash or a read past the end), and
// so is any single corrupted byte of the header fields that cannot take another valid value.
TEST_F(OutputFile, TruncatedAndCorruptFiles) {
  std::string s = "MCOUT002";
  put<uint32_t>(s, 2);
  for (int trial = 0; trial < 2; ++trial) {
    put<uint32_t>(s, 2);
    tensor_header(s, "bfloat16", {3}, 3, "bfloat16");
    for (uint16_t b : {0x3f80, 0x4000, 0xc040}) put<uint16_t>(s, b);
    tensor_header(s, "float32", {2, 1}, 2, "float32");
    put<float>(s, 0.25f);
    put<float>(s, 8.0f);
  }
  ASSERT_TRUE(read_output_file(write(s)).ok());
  for (std::size_t cut = 0; cut < s.size(); ++cut) {
    auto r = read_output_file(write(s.substr(0, cut)));
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
  }
  // Each byte set to 0xff: a length, count, rank, shape or storage name goes out of range, or the
  // data no longer ends where the file does. Bytes inside names or data may stay valid.
  for (std::size_t i = 0; i < s.size(); ++i) {
    std::string corrupt = s;
    corrupt[i] = '\xff';
    auto r = read_output_file(write(corrupt));
    if (i < 8 + 4 + 4 + 4) {  // magic, trial count, tensor count, dtype length
      EXPECT_FALSE(r.ok()) << "byte " << i;
    }
  }
}

// Each tensor travels in its own dtype's bytes; the reader widens every storage type exactly.
TEST_F(OutputFile, ReadsEveryStorageType) {
  std::string s = "MCOUT002";
  put<uint32_t>(s, 1);
  put<uint32_t>(s, 11);
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
  tensor_header(s, "int64", {2}, 2, "int64");
  put<int64_t>(s, -(int64_t{1} << 40));
  put<int64_t>(s, (int64_t{1} << 53) + 1);  // not a double: rounds to even
  tensor_header(s, "bool", {3}, 3, "bool");
  s += std::string("\x01\x00\x01", 3);
  tensor_header(s, "complex64", {0, 3}, 0, "float64");  // widened by the writer; empty here
  tensor_header(s, "float32", {2}, 2, "float32");
  put<float>(s, 0.1f);
  put<float>(s, -std::numeric_limits<float>::infinity());
  tensor_header(s, "int32", {2}, 2, "int32");
  put<int32_t>(s, std::numeric_limits<int32_t>::min());
  put<int32_t>(s, 7);
  tensor_header(s, "int16", {1}, 1, "int16");
  put<int16_t>(s, -32768);
  tensor_header(s, "int8", {2}, 2, "int8");
  put<int8_t>(s, -128);
  put<int8_t>(s, 127);
  tensor_header(s, "uint8", {1}, 1, "uint8");
  put<uint8_t>(s, 255);
  auto r = read_output_file(write(s));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto& t = (*r)[0];
  ASSERT_EQ(t.size(), 11u);
  EXPECT_EQ(values(t[0]), (std::vector<double>{1.5, -2.0}));
  EXPECT_EQ(t[1].value(0), 1.5);
  EXPECT_EQ(t[1].value(1), std::ldexp(1.0, -24));
  EXPECT_EQ(t[1].value(2), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(t[1].value(3)));
  EXPECT_EQ(values(t[2]), (std::vector<double>{0.1}));
  EXPECT_TRUE(t[2].shape().empty());
  EXPECT_EQ(values(t[3]), (std::vector<double>{-1099511627776.0, 9007199254740992.0}));
  EXPECT_EQ(values(t[4]), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(t[4].storage(), StorageType::kBool);
  EXPECT_EQ(t[5].dtype(), "complex64");
  EXPECT_EQ(t[5].storage(), StorageType::kFloat64);
  EXPECT_EQ(t[5].numel(), 0u);
  EXPECT_EQ(values(t[6]), (std::vector<double>{static_cast<double>(0.1f), -INFINITY}));
  EXPECT_EQ(values(t[7]), (std::vector<double>{-2147483648.0, 7}));
  EXPECT_EQ(values(t[8]), (std::vector<double>{-32768}));
  EXPECT_EQ(values(t[9]), (std::vector<double>{-128, 127}));
  EXPECT_EQ(values(t[10]), (std::vector<double>{255}));
}

// All 65536 bit patterns of each 16-bit float type widen as the reference conversions do.
TEST_F(OutputFile, Widens16BitFloatsExactly) {
  std::string s = "MCOUT002";
  put<uint32_t>(s, 1);
  put<uint32_t>(s, 2);
  for (const char* type : {"float16", "bfloat16"}) {
    tensor_header(s, type, {65536}, 65536, type);
    for (uint32_t b = 0; b < 65536; ++b) put<uint16_t>(s, static_cast<uint16_t>(b));
  }
  auto r = read_output_file(write(s));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const TensorData& f16 = (*r)[0][0];
  const TensorData& bf16 = (*r)[0][1];
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const double want16 = float16_by_ldexp(bits);
    const double got16 = f16.value(b);
    if (std::isnan(want16)) {
      EXPECT_TRUE(std::isnan(got16)) << b;
    } else {
      EXPECT_EQ(got16, want16) << b;
      EXPECT_EQ(std::signbit(got16), std::signbit(want16)) << b;  // -0 stays -0
    }
    const uint32_t wide = b << 16;
    float want_bf;
    std::memcpy(&want_bf, &wide, sizeof want_bf);
    const double got_bf = bf16.value(b);
    if (std::isnan(want_bf)) {
      EXPECT_TRUE(std::isnan(got_bf)) << b;
    } else {
      EXPECT_EQ(got_bf, static_cast<double>(want_bf)) << b;
    }
  }
}

// The bytes outlive the file and the result vector: tensors stay readable after the file is
// replaced or deleted, and after every other copy is gone.
TEST_F(OutputFile, TensorsOutliveTheFile) {
  auto p = write(one_tensor_file(2));
  auto r = read_output_file(p);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::optional<TensorData> kept = (*r)[0][0];
  r = Status(StatusCode::kInternal, "dropped");  // the vector and its tensors are gone
  std::string other = one_tensor_file(2);
  std::memset(other.data() + other.size() - 8, 0x7f, 8);
  write(other);  // replaced by rename
  EXPECT_EQ(values(*kept), (std::vector<double>{1.5, -2.0}));
  ASSERT_TRUE(std::filesystem::remove(p));
  EXPECT_EQ(values(*kept), (std::vector<double>{1.5, -2.0}));
  dir_.reset();  // the whole directory
  EXPECT_EQ(values(*kept), (std::vector<double>{1.5, -2.0}));
  TensorData copy = *kept;
  kept.reset();
  EXPECT_EQ(values(copy), (std::vector<double>{1.5, -2.0}));
}

}  // namespace
}  // namespace musacoder::verify
