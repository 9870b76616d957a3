// The SwiGLU kernels (src/model/cuda/swiglu_kernels.cu), run as written on the CPU through
// tests/support/cuda_emulation.h, against host code of swiglu_kernels.h's formulas with the same roundings
// (the values torch's silu, mul and their backwards give): bit for bit, every dtype, a length that is not a
// multiple of the grid. The GPU test ModelGpu.FusedSwigluEqualsTheOpsForwardAndBackward compares them with
// the ops on a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "support/cuda_emulation.h"
#define MUSACODER_CUDA_EMULATION
#include "model/cuda/swiglu_kernels.cu"

namespace musacoder::model::cuda {
namespace {

template <typename T>
void check_swiglu(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<T> g(n), u(n), dy(n), out(n), dg(n), du(n);
  for (int64_t i = 0; i < n; ++i) {
    g[i] = from_float<T>(normal(rng) * 3.f), u[i] = from_float<T>(normal(rng)),
    dy[i] = from_float<T>(normal(rng));
  }
  SwigluArgs a;
  a.n = n, a.gate = g.data(), a.up = u.data(), a.out = out.data(), a.grad = dy.data(), a.d_gate = dg.data();
  a.d_up = du.data();
  cuda_emulation::launch({3, 1, 1}, kSwigluThreads, 0, [&] { forward_kernel<T>(a); });
  cuda_emulation::launch({3, 1, 1}, kSwigluThreads, 0, [&] { backward_kernel<T>(a); });
  for (int64_t i = 0; i < n; ++i) {
    const float x = to_float(g[i]), sig = 1.0f / (1.0f + std::exp(-x));
    const float s = round_to<T>(x / (1.0f + std::exp(-x)));
    const T want_out = from_float<T>(s * to_float(u[i]));
    const T want_du = from_float<T>(to_float(dy[i]) * s);
    const float ds = round_to<T>(to_float(dy[i]) * to_float(u[i]));
    const T want_dg = from_float<T>(ds * sig * (1.0f + x * (1.0f - sig)));
    ASSERT_EQ(std::memcmp(&out[i], &want_out, sizeof(T)), 0) << "out " << i;
    ASSERT_EQ(std::memcmp(&du[i], &want_du, sizeof(T)), 0) << "d_up " << i;
    ASSERT_EQ(std::memcmp(&dg[i], &want_dg, sizeof(T)), 0) << "d_gate " << i;
  }
}

TEST(SwigluEmulated, ForwardAndBackwardBitForBitEveryDtype) {
  std::mt19937 rng(9);
  check_swiglu<float>(1000, rng);
  check_swiglu<__half>(1537, rng);
  check_swiglu<__nv_bfloat16>(2049, rng);
}

}  // namespace
}  // namespace musacoder::model::cuda
