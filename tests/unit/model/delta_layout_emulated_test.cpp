// The delta rule's input-layout kernel (src/model/cuda/delta_rule_layout.cu), run as written on the CPU
// through tests/support/cuda_emulation.h, against host code of what delta_rule_kernels.h states: q/k heads
// repeated to the value heads, L2-normalised (q also scaled), v, g and β moved to (B·Hv, T_padded) rows,
// zeros past T. The inputs are strided views (q, k and v slices of one fused row; g and β slices of another),
// every element type. The GPU test DeltaRuleGpu.NoGradForwardEqualsTheAutogradForward runs the whole
// no-gradient forward on a device.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "support/cuda_emulation.h"
#define MUSACODER_CUDA_EMULATION
#include "model/cuda/delta_rule_layout.cu"

namespace musacoder::model::cuda {
namespace {

struct Case {
  int64_t B = 2, T = 70, T_padded = 128, Hk = 2, Hv = 4, dk = 32, dv = 64;
};

template <typename T>
void check_layout(const Case& c, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  // One fused row per token: q heads, k heads, v heads and 3 padding elements; g and β interleaved.
  const int64_t width = 2 * c.Hk * c.dk + c.Hv * c.dv + 3;
  std::vector<T> fused(static_cast<size_t>(c.B * c.T * width));
  for (auto& x : fused) x = from_float<T>(normal(rng));
  std::vector<float> gb(static_cast<size_t>(c.B * c.T * 2 * c.Hv));
  for (auto& x : gb) x = normal(rng);
  const int64_t rows = c.B * c.Hv, L = c.T_padded;
  std::vector<float> q_out(rows * L * c.dk, NAN), k_out(q_out), v_out(rows * L * c.dv, NAN),
      g_out(rows * L, NAN), beta_out(g_out);
  LayoutArgs a;
  a.dtype = 0;  // unused by the kernel itself
  a.B = c.B, a.T = c.T, a.T_padded = L, a.Hk = c.Hk, a.Hv = c.Hv, a.dk = c.dk, a.dv = c.dv;
  a.q = {fused.data(), c.T * width, width, c.dk};
  a.k = {fused.data() + c.Hk * c.dk, c.T * width, width, c.dk};
  a.v = {fused.data() + 2 * c.Hk * c.dk, c.T * width, width, c.dv};
  a.g = {gb.data(), c.T * 2 * c.Hv, 2 * c.Hv, 2};
  a.beta = {gb.data() + 1, c.T * 2 * c.Hv, 2 * c.Hv, 2};
  a.q_scale = 1.f / std::sqrt(static_cast<float>(c.dk));
  a.q_out = q_out.data(), a.k_out = k_out.data(), a.v_out = v_out.data(), a.g_out = g_out.data();
  a.beta_out = beta_out.data();
  const int64_t threads = rows * L * 32;
  cuda_emulation::launch({static_cast<unsigned>((threads + 255) / 256), 1, 1}, 256, 0,
                         [&] { layout_kernel<T>(a); });

  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hv; ++h)
      for (int64_t t = 0; t < L; ++t) {
        const int64_t item = (b * c.Hv + h) * L + t, hk = h / (c.Hv / c.Hk);
        const T* row = fused.data() + (b * c.T + std::min(t, c.T - 1)) * width;
        for (int part = 0; part < 2; ++part) {  // q, then k
          const T* x = row + part * c.Hk * c.dk + hk * c.dk;
          float sq = 0.f;
          for (int64_t d = 0; d < c.dk; ++d) sq += to_float(x[d]) * to_float(x[d]);
          const float r = 1.f / std::sqrt(sq + 1e-6f), scale = part == 0 ? a.q_scale : 1.f;
          const float* got = (part == 0 ? q_out : k_out).data() + item * c.dk;
          for (int64_t d = 0; d < c.dk; ++d)
            ASSERT_NEAR(got[d], t < c.T ? to_float(x[d]) * r * scale : 0.f, 2e-6f)
                << "part " << part << " b " << b << " h " << h << " t " << t << " d " << d;
        }
        for (int64_t d = 0; d < c.dv; ++d)
          ASSERT_EQ(v_out[item * c.dv + d], t < c.T ? to_float(row[2 * c.Hk * c.dk + h * c.dv + d]) : 0.f);
        const float* gbt = gb.data() + (b * c.T + std::min(t, c.T - 1)) * 2 * c.Hv + 2 * h;
        ASSERT_EQ(g_out[item], t < c.T ? gbt[0] : 0.f);
        ASSERT_EQ(beta_out[item], t < c.T ? gbt[1] : 0.f);
      }
}

TEST(DeltaLayoutEmulated, RepeatsNormalisesAndPadsEveryDtype) {
  std::mt19937 rng(7);
  check_layout<float>({}, rng);
  check_layout<__half>({}, rng);
  check_layout<__nv_bfloat16>({}, rng);
}

TEST(DeltaLayoutEmulated, HeadDimAboveTheWarpAndNoRepeat) {
  std::mt19937 rng(11);
  check_layout<float>({1, 64, 64, 3, 3, 128, 96}, rng);        // T a chunk multiple: no padding rows
  check_layout<__nv_bfloat16>({1, 5, 64, 1, 4, 16, 32}, rng);  // dk below a warp's width
}

}  // namespace
}  // namespace musacoder::model::cuda
