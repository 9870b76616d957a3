// Host helpers shared by the engine's emulated-kernel tests (fused_ops_emulated_test.cpp,
// decode_linear_emulated_test.cpp): random element-type values, a bitwise comparison, and RoPE's rotation of
// one head row with the fused kernels' roundings (fused_ops_cuda.h). Include after support/cuda_emulation.h.
#pragma once

#include <cstring>
#include <random>
#include <vector>

#include "support/cuda_emulation.h"

namespace musacoder::engine::test {

template <typename T>
std::vector<T> random_values(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> normal;
  std::vector<T> v(n);
  for (auto& x : v) x = from_float<T>(normal(rng) * scale);
  return v;
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// The rotated pair (j, j + half) of one head row, as fused_ops_cuda.h states it.
template <typename T>
void host_rotate(const T* x, const T* c, const T* s, int half, T* out) {
  for (int j = 0; j < half; ++j) {
    const float lo = to_float(x[j]), hi = to_float(x[j + half]);
    out[j] = from_float<T>(round_to<T>(lo * to_float(c[j])) + round_to<T>(-hi * to_float(s[j])));
    out[j + half] =
        from_float<T>(round_to<T>(hi * to_float(c[j + half])) + round_to<T>(lo * to_float(s[j + half])));
  }
}

}  // namespace musacoder::engine::test
