// The element storage types of a trial-outputs file (python/mooreeval_runner/tensors.py) and
// their exact widening to double. Shared by the reader (output_file.cpp) and the numeric check
// (compare.cpp), which loops over raw storage without materialising doubles.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

namespace musacoder::verify {

enum class StorageType : uint8_t {
  kFloat64,
  kFloat32,
  kFloat16,
  kBFloat16,
  kInt64,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kBool,  // one byte per element, 0 or 1 (written as uint8)
};

// The name the file uses ("float32", "bool", ...); nullopt for an unknown name.
std::optional<StorageType> storage_type_from_name(std::string_view name);
const char* storage_type_name(StorageType s);

// Bit patterns of the 16-bit float types, distinct C++ types so that widen() can overload on them.
struct Float16Bits {
  uint16_t bits;
};
struct BFloat16Bits {
  uint16_t bits;
};

inline double widen(double v) {
  return v;
}
inline double widen(float v) {
  return v;
}
inline double widen(int64_t v) {
  return static_cast<double>(v);
}  // inexact beyond 2**53
inline double widen(int32_t v) {
  return v;
}
inline double widen(int16_t v) {
  return v;
}
inline double widen(int8_t v) {
  return v;
}
inline double widen(uint8_t v) {
  return v;
}

inline double widen(BFloat16Bits v) {
  const uint32_t wide = static_cast<uint32_t>(v.bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

// Exact: every float16 value is a float. Any NaN becomes the canonical quiet NaN.
inline double widen(Float16Bits v) {
  const uint32_t sign = static_cast<uint32_t>(v.bits & 0x8000) << 16;
  const uint32_t exponent = (v.bits >> 10) & 0x1f;
  const uint32_t mantissa = v.bits & 0x3ff;
  if (exponent == 0) {  // zero and subnormals: mantissa * 2**-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f)
    return mantissa
               ? std::numeric_limits<double>::quiet_NaN()
               : (sign ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
  const uint32_t bits = sign | ((exponent + 112) << 23) | (mantissa << 13);  // rebias 15 -> 127
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Element i of a little-endian array of T at p, which need not be aligned for T.
template <typename T>
inline T load(const std::byte* p, std::size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}

// Calls f(T{}) with the C++ type T that holds one element of storage type s.
template <typename F>
decltype(auto) visit_storage(StorageType s, F&& f) {
  switch (s) {
    case StorageType::kFloat64:
      return f(double{});
    case StorageType::kFloat32:
      return f(float{});
    case StorageType::kFloat16:
      return f(Float16Bits{});
    case StorageType::kBFloat16:
      return f(BFloat16Bits{});
    case StorageType::kInt64:
      return f(int64_t{});
    case StorageType::kInt32:
      return f(int32_t{});
    case StorageType::kInt16:
      return f(int16_t{});
    case StorageType::kInt8:
      return f(int8_t{});
    case StorageType::kUInt8:
    case StorageType::kBool:
      break;
  }
  return f(uint8_t{});
}

}  // namespace musacoder::verify
