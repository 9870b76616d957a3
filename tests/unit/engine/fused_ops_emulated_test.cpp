// The engine's fused CUDA kernels (src/engine/fused_ops_cuda.cu), run as written on the CPU through
// tests/support/cuda_emulation.h, against host code of the formulas fused_ops_cuda.h states (the same
// roundings to the element type): rope and rope_write_kv bit for bit on strided q/k/v rows with scattered
// cache slots, silu_mul bit for bit, add_rms_norm to float rounding (its sum runs in another order). Every
// element type. The GPU test (tests/gpu/engine, FusedOps.*) compares the same kernels with the model's
// modules on a device.
#include <gtest/gtest.h>

#include <random>

#include "support/cuda_emulation.h"
#define MUSACODER_CUDA_EMULATION
#include "engine/fused_ops_cuda.cu"
#include "unit/engine/emulated_host.h"

namespace musacoder::engine {
namespace {

using test::host_rotate;
using test::random_values;
using test::same_bits;

template <typename T>
void check_rope_write_kv(std::mt19937& rng) {
  const int N = 7, H = 6, Hkv = 2, D = 64, slots_total = 40, width = (H + 2 * Hkv) * D + 8;  // padded rows
  const std::vector<T> fused = random_values<T>(size_t(N) * width, rng),
                       cos = random_values<T>(size_t(N) * D, rng), sin = random_values<T>(size_t(N) * D, rng);
  std::vector<int64_t> slots(slots_total);
  for (int i = 0; i < slots_total; ++i) slots[i] = i;
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(N);
  std::vector<T> k_pages = random_values<T>(size_t(slots_total) * Hkv * D, rng), v_pages = k_pages;
  std::vector<T> q_out(size_t(N) * H * D), k_out(size_t(N) * Hkv * D);
  // The host reference: rope on each head row, k rotated and v copied to their slots.
  std::vector<T> q_want(q_out.size()), k_want(k_out.size()), kp_want = k_pages, vp_want = v_pages;
  for (int r = 0; r < N; ++r) {
    const T* row = fused.data() + size_t(r) * width;
    for (int h = 0; h < H; ++h)
      host_rotate<T>(row + h * D, &cos[size_t(r) * D], &sin[size_t(r) * D], D / 2,
                     &q_want[(size_t(r) * H + h) * D]);
    for (int h = 0; h < Hkv; ++h) {
      T* k = &k_want[(size_t(r) * Hkv + h) * D];
      host_rotate<T>(row + (H + h) * D, &cos[size_t(r) * D], &sin[size_t(r) * D], D / 2, k);
      std::copy(k, k + D, &kp_want[(size_t(slots[r]) * Hkv + h) * D]);
      std::copy(row + (H + Hkv + h) * D, row + (H + Hkv + h + 1) * D,
                &vp_want[(size_t(slots[r]) * Hkv + h) * D]);
    }
  }
  RopeKvArgs a;
  a.q_out = q_out.data(), a.k_out = k_out.data();
  a.q = fused.data(), a.k = fused.data() + H * D, a.v = fused.data() + (H + Hkv) * D;
  a.q_stride = a.k_stride = a.v_stride = width;
  a.cos = cos.data(), a.sin = sin.data(), a.slots = slots.data();
  a.k_pages = k_pages.data(), a.v_pages = v_pages.data();
  a.rows = N, a.heads = H, a.kv_heads = Hkv, a.head_dim = D;
  cuda_emulation::launch({3, 1, 1}, 64, 0, [&] { rope_write_kv_kernel<T>(a); });  // grid-stride over 3 blocks
  EXPECT_TRUE(same_bits(q_out, q_want)) << "q";
  EXPECT_TRUE(same_bits(k_out, k_want)) << "k";
  EXPECT_TRUE(same_bits(k_pages, kp_want)) << "k pages";
  EXPECT_TRUE(same_bits(v_pages, vp_want)) << "v pages";
  // rope_kernel alone on the strided q rows gives the same q.
  std::vector<T> q_rope(q_out.size());
  FusedArgs f;
  f.out = q_rope.data(), f.h = const_cast<T*>(fused.data()), f.in_stride = width;
  f.cos = cos.data(), f.sin = sin.data(), f.rows = N, f.cols = H * D, f.head_dim = D;
  cuda_emulation::launch({2, 1, 1}, 64, 0, [&] { rope_kernel<T>(f); });
  EXPECT_TRUE(same_bits(q_rope, q_want)) << "rope_kernel";
}

template <typename T>
void check_add_rms_norm(int rows, int C, std::mt19937& rng) {
  std::vector<T> h = random_values<T>(size_t(rows) * C, rng), delta = random_values<T>(h.size(), rng),
                 w = random_values<T>(C, rng), norm_out(h.size());
  std::vector<T> h_want(h.size());
  std::vector<double> out_want(h.size());
  for (int r = 0; r < rows; ++r) {
    double sq = 0;
    for (int c = 0; c < C; ++c) {
      const float v = round_to<T>(to_float(h[size_t(r) * C + c]) + to_float(delta[size_t(r) * C + c]));
      h_want[size_t(r) * C + c] = from_float<T>(v);
      sq += double(v) * v;
    }
    const double rstd = 1.0 / std::sqrt(sq / C + 1e-6);
    for (int c = 0; c < C; ++c)
      out_want[size_t(r) * C + c] =
          to_float(w[c]) * round_to<T>(float(to_float(h_want[size_t(r) * C + c]) * rstd));
  }
  FusedArgs n;
  n.out = norm_out.data(), n.h = h.data(), n.delta = delta.data(), n.weight = w.data(), n.rows = rows,
  n.cols = C;
  n.eps = 1e-6f;
  cuda_emulation::launch({unsigned(rows), 1, 1}, kNormThreads, 0, [&] { add_rms_norm_kernel<T>(n); });
  EXPECT_TRUE(same_bits(h, h_want)) << "the residual update, C=" << C;
  double worst = 0;
  for (size_t i = 0; i < out_want.size(); ++i)
    worst = std::max(worst, std::abs(to_float(norm_out[i]) - out_want[i]) / (std::abs(out_want[i]) + 1e-2));
  const double tolerance = std::is_same_v<T, float> ? 1e-5 : std::is_same_v<T, __half> ? 2e-3 : 1.6e-2;
  EXPECT_LE(worst, tolerance) << "norm, C=" << C;
  // Without delta (the q/k norms): h is only read, and the updated row normalises to the same bits.
  std::vector<T> again(h.size());
  n.delta = nullptr, n.out = again.data();
  cuda_emulation::launch({unsigned(rows), 1, 1}, kNormThreads, 0, [&] { add_rms_norm_kernel<T>(n); });
  EXPECT_TRUE(same_bits(h, h_want)) << "h unchanged without delta, C=" << C;
  EXPECT_TRUE(same_bits(again, norm_out)) << "no delta, C=" << C;
}

template <typename T>
void check_silu_mul(std::mt19937& rng) {
  const int rows = 5, cols = 96;
  const std::vector<T> gu = random_values<T>(size_t(rows) * 2 * cols, rng, 3.0f);  // gate | up per row
  std::vector<T> out(size_t(rows) * cols), want(out.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const float g = to_float(gu[size_t(r) * 2 * cols + c]);
      want[size_t(r) * cols + c] =
          from_float<T>(round_to<T>(g / (1.0f + expf(-g))) * to_float(gu[size_t(r) * 2 * cols + cols + c]));
    }
  FusedArgs f;
  f.out = out.data(), f.delta = gu.data(), f.weight = gu.data() + cols, f.rows = rows, f.cols = cols;
  f.in_stride = 2 * cols;
  cuda_emulation::launch({2, 1, 1}, 64, 0, [&] { silu_mul_kernel<T>(f); });
  EXPECT_TRUE(same_bits(out, want)) << "silu_mul";
}

TEST(FusedOpsEmulated, RopeWriteKvAndRopeEqualTheFormulaBitForBit) {
  std::mt19937 rng(5);
  check_rope_write_kv<float>(rng);
  check_rope_write_kv<__half>(rng);
  check_rope_write_kv<__nv_bfloat16>(rng);
}

TEST(FusedOpsEmulated, SiluMulAndAddRmsNormEqualTheFormula) {
  std::mt19937 rng(6);
  check_silu_mul<float>(rng);
  check_silu_mul<__half>(rng);
  check_silu_mul<__nv_bfloat16>(rng);
  // 300: not a multiple of the block's threads, held in registers; 5,000: wider than the registers hold
  for (const int C : {300, 5000}) {
    check_add_rms_norm<float>(5, C, rng);
    check_add_rms_norm<__half>(5, C, rng);
    check_add_rms_norm<__nv_bfloat16>(5, C, rng);
  }
}

}  // namespace
}  // namespace musacoder::engine
