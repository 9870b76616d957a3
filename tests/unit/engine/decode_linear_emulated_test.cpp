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
#include "unit/engine/emulated_host.h"

namespace musacoder::engine {
namespace {

using test::host_rotate;
using test::random_values;
using test::same_bits;

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
    if (c.prologue == DecodeLinearPrologue::kCopy) {
      for (int64_t i = 0; i < k; ++i) x[r * k + i] = gate_up[r * in_stride + i];
      continue;
    }
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

// Launches decode_linear_kernel<T, rows, per_warp> over `blocks` blocks (the emulator runs them in turn).
template <typename T>
void launch_kernel(const DecodeLinearArgs& a, int per_warp, unsigned blocks, size_t smem) {
  auto kernel = [&](auto rows_tag, auto per_warp_tag) {
    decode_linear_kernel<T, decltype(rows_tag)::value, decltype(per_warp_tag)::value>(a);
  };
  auto with_rows = [&](auto per_warp_tag) {
    switch (a.rows) {
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
  cuda_emulation::launch({blocks, 1, 1}, kLinearThreads, smem, [&] {
    if (per_warp == 4) return with_rows(std::integral_constant<int, 4>{});
    if (per_warp == 2) return with_rows(std::integral_constant<int, 2>{});
    with_rows(std::integral_constant<int, 1>{});
  });
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
  launch_kernel<T>(a, c.per_warp, blocks, smem);

  auto h_sum = nans<T>(size_t(c.rows) * k);
  const auto x = host_prologue<T>(c, k, in_stride, h, delta, norm_w, eps, gate_up, h_sum);
  const std::string what = "rows " + std::to_string(c.rows) + ", per warp " + std::to_string(c.per_warp) +
                           (c.prologue == DecodeLinearPrologue::kNorm   ? ", norm"
                            : c.prologue == DecodeLinearPrologue::kCopy ? ", copy"
                                                                        : ", silu_mul") +
                           (c.delta ? " + delta" : "") + (c.bias ? ", bias" : "");
  if (c.prologue == DecodeLinearPrologue::kNorm && c.delta) {
    EXPECT_TRUE(same_bits(h_out, h_sum)) << "h + delta, " << what;
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

// The q/k/v epilogue against the same kernel without it followed by rope_write_kv's formulas on the host: an
// output's float sum does not depend on which warp computes it, so q and the pages are compared bit for bit.
template <typename T>
void run_rope_case(int rows, bool bias_on, std::mt19937& rng) {
  constexpr int V = 16 / sizeof(T);
  const int H = 3, Hkv = 1, D = 16, half = D / 2, slots_total = 9;
  const int64_t n = (H + 2 * Hkv) * D, k = 32 * V + V;
  const auto weight = random_values<T>(size_t(n) * k, rng), bias = random_values<T>(n, rng);
  const auto h = random_values<T>(size_t(rows) * k, rng), delta = random_values<T>(size_t(rows) * k, rng);
  const auto norm_w = random_values<T>(k, rng), cos = random_values<T>(size_t(rows) * D, rng),
             sin = random_values<T>(size_t(rows) * D, rng);
  std::vector<int64_t> slots(slots_total);
  for (int i = 0; i < slots_total; ++i) slots[i] = i;
  std::shuffle(slots.begin(), slots.end(), rng);
  auto k_pages = random_values<T>(size_t(slots_total) * Hkv * D, rng),
       v_pages = random_values<T>(k_pages.size(), rng);
  auto q_out = nans<T>(size_t(rows) * H * D), y = nans<T>(size_t(rows) * n),
       h_out = nans<T>(size_t(rows) * k);
  DecodeLinearArgs a;
  a.weight = weight.data(), a.bias = bias_on ? bias.data() : nullptr, a.rows = rows, a.n = n, a.k = k;
  a.h = h.data(), a.delta = delta.data(), a.norm_weight = norm_w.data(), a.h_out = h_out.data(),
  a.eps = 1e-6f;
  const size_t smem = static_cast<size_t>(decode_linear_shared_bytes(rows, k, sizeof(T) == 4 ? 0 : 1));
  a.y = y.data();
  launch_kernel<T>(a, 1, static_cast<unsigned>((n + kLinearWarps - 1) / kLinearWarps), smem);
  std::vector<T> q_want(q_out.size()), kp_want = k_pages, vp_want = v_pages;
  for (int r = 0; r < rows; ++r) {
    const T* yr = y.data() + r * n;
    const T *c = cos.data() + r * D, *s = sin.data() + r * D;
    for (int hd = 0; hd < H; ++hd) host_rotate<T>(yr + hd * D, c, s, half, &q_want[(size_t(r) * H + hd) * D]);
    host_rotate<T>(yr + H * D, c, s, half, &kp_want[size_t(slots[r]) * Hkv * D]);
    std::copy(yr + (H + Hkv) * D, yr + (H + 2 * Hkv) * D, &vp_want[size_t(slots[r]) * Hkv * D]);
  }
  a.y = nullptr, a.rope = true, a.q_out = q_out.data(), a.cos = cos.data(), a.sin = sin.data();
  a.slots = slots.data(), a.k_pages = k_pages.data(), a.v_pages = v_pages.data();
  a.heads = H, a.kv_heads = Hkv, a.head_dim = D;
  launch_kernel<T>(a, 2, static_cast<unsigned>((n / 2 + kLinearWarps - 1) / kLinearWarps), smem);
  const std::string what = "rope, rows " + std::to_string(rows) + (bias_on ? ", bias" : "");
  EXPECT_TRUE(same_bits(q_out, q_want)) << what << ": q";
  EXPECT_TRUE(same_bits(k_pages, kp_want)) << what << ": k pages";
  EXPECT_TRUE(same_bits(v_pages, vp_want)) << what << ": v pages";
}

// Each emulated launch runs 256 threads; the cases cover every rows count, outputs per warp and prologue
// without taking every combination.
template <typename T>
void run_all(unsigned seed) {
  std::mt19937 rng(seed);
  for (int per_warp : {1, 2, 4}) run_case<T>({3, per_warp, true, true, DecodeLinearPrologue::kNorm}, rng);
  run_case<T>({1, 4, false, false, DecodeLinearPrologue::kNorm}, rng);
  run_case<T>({4, 1, true, true, DecodeLinearPrologue::kNorm}, rng);
  run_case<T>({2, 4, true, false, DecodeLinearPrologue::kSiluMul}, rng);
  run_case<T>({4, 1, false, false, DecodeLinearPrologue::kSiluMul}, rng);
  run_case<T>({1, 2, true, false, DecodeLinearPrologue::kCopy}, rng);
  run_case<T>({4, 4, false, false, DecodeLinearPrologue::kCopy}, rng);
  run_rope_case<T>(1, true, rng);
  run_rope_case<T>(4, false, rng);
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
