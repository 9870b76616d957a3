// The decode-batch projection kernels (src/engine/decode_linear_cuda.cu), run as written on the CPU through
// tests/support/cuda_emulation.h, against host code of what decode_linear_cuda.h states: the prologue's rows
// computed with the unfused kernels' roundings and the product in double. Every element type, 1–4 rows, 1/2/4
// outputs per warp, a row count that leaves the last block part-empty and a k whose last 16-byte stride
// leaves lanes idle, with and without bias, the norm with and without a residual update, SiLU·mul on strided
// rows. round(h + delta) is checked bit for bit; y within the element type's rounding (the norm's sum of
// squares, and so a few normed elements, may round differently in another summation order). The GPU test
// (tests/gpu/engine, DecodeLinear.*) compares the same kernels with the libtorch ops on a device.
#include <gtest/gtest.h>

#include <random>

#include "support/cuda_emulation.h"
#define MUSACODER_CUDA_EMULATION
#include "engine/decode_linear_cuda.cu"

namespace musacoder::engine {
namespace {

template <typename T>
std::vector<T> random_values(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> normal;
  std::vector<T> v(n);
  for (auto& x : v) x = from_float<T>(normal(rng) * scale);
  return v;
}

template <typename T>
std::vector<T> nans(size_t n) {
  std::vector<T> v(n);
  std::memset(v.data(), 0xFF, n * sizeof(T));
  return v;
}

template <typename T>
double relative_rounding() {
  return sizeof(T) == 4 ? 1e-6 : (std::is_same_v<T, __half> ? 1.0 / 2048 : 1.0 / 256);
}

struct Case {
  int rows, per_warp;
  bool bias, delta;
  DecodeLinearPrologue prologue;
};

// The prologue's rows (rows × k) as the unfused kernels compute them; h_sum: round(h + delta).
template <typename T>
std::vector<T> host_prologue(const Case& c, int64_t k, int64_t in_stride, const std::vector<T>& h,
                             const std::vector<T>& delta, const std::vector<T>& w, float eps,
                             const std::vector<T>& gate_up, std::vector<T>& h_sum) {
  std::vector<T> x(size_t(c.rows) * k);
  for (int r = 0; r < c.rows; ++r) {
    if (c.prologue == DecodeLinearPrologue::kSiluMul) {
      for (int64_t i = 0; i < k; ++i) {
        const float g = to_float(gate_up[r * in_stride + i]);
        const float s = round_to<T>(g / (1.0f + expf(-g)));
        x[r * k + i] = from_float<T>(s * to_float(gate_up[r * in_stride + k + i]));
      }
      continue;
    }
    float sq = 0.f;
    for (int64_t i = 0; i < k; ++i) {
      float v = to_float(h[r * k + i]);
      if (c.delta) v = round_to<T>(v + to_float(delta[r * k + i]));
      h_sum[r * k + i] = from_float<T>(v);
      sq += v * v;
    }
    const float rstd = 1.0f / sqrtf(sq / static_cast<float>(k) + eps);
    for (int64_t i = 0; i < k; ++i)
      x[r * k + i] = from_float<T>(to_float(w[i]) * round_to<T>(to_float(h_sum[r * k + i]) * rstd));
  }
  return x;
}

template <typename T>
void run_case(const Case& c, std::mt19937& rng) {
  constexpr int V = 16 / sizeof(T);
  const int64_t n = 37, k = 2 * 32 * V + 3 * V, in_stride = 2 * k + V;  // gate | up | padding per row
  const float eps = 1e-6f;
  const auto weight = random_values<T>(size_t(n) * k, rng), bias = random_values<T>(n, rng);
  const auto h = random_values<T>(size_t(c.rows) * k, rng), delta = random_values<T>(size_t(c.rows) * k, rng);
  const auto norm_w = random_values<T>(k, rng),
             gate_up = random_values<T>(size_t(c.rows) * in_stride, rng, 2.f);
  auto y = nans<T>(size_t(c.rows) * n), h_out = nans<T>(size_t(c.rows) * k);
  DecodeLinearArgs a;
  a.y = y.data(), a.weight = weight.data(), a.bias = c.bias ? bias.data() : nullptr;
  a.rows = c.rows, a.n = n, a.k = k, a.prologue = c.prologue;
  a.h = h.data(), a.delta = c.delta ? delta.data() : nullptr, a.norm_weight = norm_w.data(), a.eps = eps;
  a.h_out = h_out.data();
  a.gate = gate_up.data(), a.up = gate_up.data() + k, a.in_stride = in_stride;
  const int per_block = c.per_warp * kLinearWarps;
  const unsigned blocks = static_cast<unsigned>((n + per_block - 1) / per_block);
  const size_t smem = static_cast<size_t>(decode_linear_shared_bytes(c.rows, k, sizeof(T) == 4 ? 0 : 1));
  auto body = [&] {
    auto kernel = [&](auto rows_tag, auto per_warp_tag) {
      decode_linear_kernel<T, decltype(rows_tag)::value, decltype(per_warp_tag)::value>(a);
    };
    auto with_rows = [&](auto per_warp_tag) {
      switch (c.rows) {
        case 1:
          return kernel(std::integral_constant<int, 1>{}, per_warp_tag);
        case 2:
          return kernel(std::integral_constant<int, 2>{}, per_warp_tag);
        case 3:
          return kernel(std::integral_constant<int, 3>{}, per_warp_tag);
        default:
          return kernel(std::integral_constant<int, 4>{}, per_warp_tag);
      }
    };
    if (c.per_warp == 4) return with_rows(std::integral_constant<int, 4>{});
    if (c.per_warp == 2) return with_rows(std::integral_constant<int, 2>{});
    with_rows(std::integral_constant<int, 1>{});
  };
  cuda_emulation::launch({blocks, 1, 1}, kLinearThreads, smem, body);

  auto h_sum = nans<T>(size_t(c.rows) * k);
  const auto x = host_prologue<T>(c, k, in_stride, h, delta, norm_w, eps, gate_up, h_sum);
  const std::string what = "rows " + std::to_string(c.rows) + ", per warp " + std::to_string(c.per_warp) +
                           (c.prologue == DecodeLinearPrologue::kNorm ? ", norm" : ", silu_mul") +
                           (c.delta ? " + delta" : "") + (c.bias ? ", bias" : "");
  if (c.prologue == DecodeLinearPrologue::kNorm && c.delta) {
    EXPECT_EQ(std::memcmp(h_out.data(), h_sum.data(), h_sum.size() * sizeof(T)), 0) << "h + delta, " << what;
  }
  const double rel = relative_rounding<T>();
  // A normed element may round the other way (its rstd summed in another order): up to rel · |w · x| each.
  const double flips = c.prologue == DecodeLinearPrologue::kNorm ? rel / 4 : 1e-5;
  int bad = 0;
  for (int r = 0; r < c.rows; ++r)
    for (int64_t o = 0; o < n; ++o) {
      double want = c.bias ? to_float(bias[o]) : 0.0, magnitude = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        const double p = double(to_float(weight[o * k + i])) * to_float(x[r * k + i]);
        want += p;
        magnitude += std::abs(p);
      }
      const double got = to_float(y[r * n + o]);
      if (!(std::abs(got - want) <= rel * std::abs(want) + flips * magnitude) && ++bad <= 3)
        ADD_FAILURE() << what << ": y[" << r << ", " << o << "] = " << got << ", want " << want;
    }
  EXPECT_EQ(bad, 0) << what;
}

template <typename T>
void run_all(unsigned seed) {
  std::mt19937 rng(seed);
  for (int rows : {1, 2, 4})
    for (int per_warp : {1, 2, 4}) {
      run_case<T>({rows, per_warp, true, true, DecodeLinearPrologue::kNorm}, rng);
      run_case<T>({rows, per_warp, false, false, DecodeLinearPrologue::kNorm}, rng);
      run_case<T>({rows, per_warp, rows % 2 == 0, false, DecodeLinearPrologue::kSiluMul}, rng);
    }
  run_case<T>({3, 4, true, true, DecodeLinearPrologue::kNorm}, rng);
  run_case<T>({3, 1, true, false, DecodeLinearPrologue::kSiluMul}, rng);
}

TEST(DecodeLinearEmulated, Float32) {
  run_all<float>(1);
}
TEST(DecodeLinearEmulated, Float16) {
  run_all<__half>(2);
}
TEST(DecodeLinearEmulated, BFloat16) {
  run_all<__nv_bfloat16>(3);
}

}  // namespace
}  // namespace musacoder::engine
