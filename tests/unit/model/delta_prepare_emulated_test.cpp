// The delta rule's chunk_prepare kernel (src/model/cuda/delta_rule_prepare.cu), run as written on the CPU
// through tests/support/cuda_emulation.h, against host code (double) of the UT transform that
// delta_rule_kernels.h states: A, Aqk (transposed), u = (I + A)^-1 (β v), w = (I + A)^-1 (β k e^{cum})
// (transposed), qd (transposed), kd and the chunk decay. Shapes cover one and two feature slabs (dk 128) and
// fewer solve columns than threads. The GPU tests DeltaRuleGpu.* check the whole forward on a device.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "support/cuda_emulation.h"
#define MUSACODER_CUDA_EMULATION
#include "model/cuda/delta_rule_prepare.cu"

namespace musacoder::model::cuda {
namespace {

struct Inputs {
  DeltaShape s;
  std::vector<float> q, k, v, g, beta;
};

Inputs random_inputs(int64_t rows, int64_t T, int64_t dk, int64_t dv, std::mt19937& rng) {
  Inputs in;
  in.s.rows = rows, in.s.T = T, in.s.dk = dk, in.s.dv = dv;
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  auto normalized = [&](std::vector<float>& x, int64_t d) {  // L2-normalised rows, as the model calls it
    x.resize(rows * T * d);
    for (int64_t r = 0; r < rows * T; ++r) {
      double sq = 0;
      for (int64_t i = 0; i < d; ++i) sq += std::pow(x[r * d + i] = normal(rng), 2);
      for (int64_t i = 0; i < d; ++i) x[r * d + i] /= static_cast<float>(std::sqrt(sq));
    }
  };
  normalized(in.q, dk);
  normalized(in.k, dk);
  in.v.resize(rows * T * dv);
  for (auto& x : in.v) x = normal(rng);
  in.g.resize(rows * T);
  in.beta.resize(rows * T);
  for (auto& x : in.g) x = -0.3f * unit(rng);
  for (auto& x : in.beta) x = unit(rng);
  return in;
}

struct Scratch {
  std::vector<float> u, wt, aqkt, qdt, kd, decay;
  ChunkScratch view() { return {u.data(), wt.data(), aqkt.data(), qdt.data(), kd.data(), decay.data()}; }
};

Scratch sized(const DeltaShape& s, float fill) {
  const size_t chunks = static_cast<size_t>(s.rows * (s.T / C));
  return {std::vector<float>(chunks * C * s.dv, fill), std::vector<float>(chunks * s.dk * C, fill),
          std::vector<float>(chunks * C * C, fill),    std::vector<float>(chunks * s.dk * C, fill),
          std::vector<float>(chunks * C * s.dk, fill), std::vector<float>(chunks, fill)};
}

double dot(const float* a, const float* b, int64_t d) {
  double acc = 0;
  for (int64_t i = 0; i < d; ++i) acc += static_cast<double>(a[i]) * b[i];
  return acc;
}

// The transform of one chunk in double, written into `want` (same layouts as the kernel's).
void reference_chunk(const Inputs& in, int64_t row, int64_t n, Scratch& want) {
  const int64_t dk = in.s.dk, dv = in.s.dv, N = in.s.T / C, tok0 = row * in.s.T + n * C, chunk = row * N + n;
  std::vector<double> cum(C), A(C * C, 0.0);
  for (int i = 0; i < C; ++i) cum[i] = (i ? cum[i - 1] : 0.0) + in.g[tok0 + i];
  auto q = [&](int i) { return in.q.data() + (tok0 + i) * dk; };
  auto k = [&](int i) { return in.k.data() + (tok0 + i) * dk; };
  for (int i = 0; i < C; ++i)
    for (int j = 0; j < C; ++j) {
      const double decay = j <= i ? std::exp(cum[i] - cum[j]) : 0.0;
      want.aqkt[(chunk * C + j) * C + i] = static_cast<float>(dot(q(i), k(j), dk) * decay);
      if (j < i) A[i * C + j] = in.beta[tok0 + i] * dot(k(i), k(j), dk) * decay;
    }
  for (int64_t col = 0; col < dv + dk; ++col) {  // forward substitution per column
    std::vector<double> x(C);
    for (int i = 0; i < C; ++i) {
      double r =
          in.beta[tok0 + i] * (col < dv ? in.v[(tok0 + i) * dv + col] : k(i)[col - dv] * std::exp(cum[i]));
      for (int j = 0; j < i; ++j) r -= A[i * C + j] * x[j];
      x[i] = r;
      if (col < dv)
        want.u[(chunk * C + i) * dv + col] = static_cast<float>(r);
      else
        want.wt[(chunk * dk + col - dv) * C + i] = static_cast<float>(r);
    }
  }
  for (int i = 0; i < C; ++i)
    for (int64_t d = 0; d < dk; ++d) {
      want.qdt[(chunk * dk + d) * C + i] = static_cast<float>(q(i)[d] * std::exp(cum[i]));
      want.kd[(chunk * C + i) * dk + d] = static_cast<float>(k(i)[d] * std::exp(cum[C - 1] - cum[i]));
    }
  want.decay[chunk] = static_cast<float>(std::exp(cum[C - 1]));
}

double max_abs_diff(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(d <= worst)) worst = d;  // NaN (an element the kernel never wrote) is the worst
  }
  return worst;
}

void check_prepare(int64_t rows, int64_t T, int64_t dk, int64_t dv) {
  std::mt19937 rng(static_cast<unsigned>(rows * 1000 + dk + dv));
  Inputs in = random_inputs(rows, T, dk, dv, rng);
  Scratch got = sized(in.s, NAN), want = sized(in.s, 0.f);
  ChunkScratch view = got.view();
  const unsigned blocks = static_cast<unsigned>(rows * (T / C));
  cuda_emulation::launch(
      {blocks, 1, 1}, kPrepareThreads, sizeof(float) * prepare_floats(static_cast<int>(dk)), [&] {
        chunk_prepare_kernel(in.s, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(), view);
      });
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < T / C; ++n) reference_chunk(in, r, n, want);
  const char* names[] = {"u", "wt", "aqkt", "qdt", "kd", "decay"};
  const std::vector<float>* gots[] = {&got.u, &got.wt, &got.aqkt, &got.qdt, &got.kd, &got.decay};
  const std::vector<float>* wants[] = {&want.u, &want.wt, &want.aqkt, &want.qdt, &want.kd, &want.decay};
  for (int i = 0; i < 6; ++i) {
    const double err = max_abs_diff(*gots[i], *wants[i]);
    EXPECT_LE(err, 2e-5) << names[i] << " dk=" << dk << " dv=" << dv;
    std::printf("prepare dk=%lld dv=%lld %s max_abs_err=%.3g\n", static_cast<long long>(dk),
                static_cast<long long>(dv), names[i], err);
  }
}

TEST(DeltaPrepareEmulated, TwoFeatureSlabsAndEveryThreadSolving) {
  check_prepare(1, 64, 128, 128);
}

TEST(DeltaPrepareEmulated, OneSlabFewerColumnsThanThreadsSeveralChunksAndRows) {
  check_prepare(2, 128, 32, 64);
}

TEST(DeltaPrepareEmulated, SmallestHeads) {
  check_prepare(1, 64, 16, 32);
}

}  // namespace
}  // namespace musacoder::model::cuda
