// The chunked LM-head loss kernels (src/train/common/cuda/lm_loss_kernels.cu), run as written on the CPU
// through tests/support/cuda_emulation.h, against the formulas of lm_loss_kernels.h in double: per row log Σ
// exp and the target's logit; (softmax − onehot) · scale rounded once to the logits' dtype. Rows padded past
// the vocabulary (ld > V), a vocabulary that is not a multiple of the block, every dtype. The CUDA test
// ChunkedLmLoss.Bf16WeightGradientOnCudaEqualsTheFp32Gradient runs them through the loss on a device.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "support/cuda_emulation.h"
#define MUSACODER_CUDA_EMULATION
#include "train/common/cuda/lm_loss_kernels.cu"

namespace musacoder::train::cuda {
namespace {

template <typename T>
void check_kernels(int64_t rows, int64_t vocab, int64_t ld, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<T> logits(static_cast<size_t>(rows * ld));
  for (auto& x : logits) x = from_float<T>(normal(rng) * 4.f);
  std::vector<int64_t> targets(static_cast<size_t>(rows));
  for (auto& t : targets) t = std::uniform_int_distribution<int64_t>(0, vocab - 1)(rng);
  const LmLogits a{logits.data(), 0, rows, vocab, ld, targets.data()};
  std::vector<float> lse(rows, NAN), target_logit(rows, NAN);
  cuda_emulation::launch({static_cast<unsigned>(rows), 1, 1}, kRowThreads, 0,
                         [&] { rows_kernel<T>(a, lse.data(), target_logit.data()); });
  const float scale = 0.37f;
  std::vector<T> grad(static_cast<size_t>(rows * vocab));
  cuda_emulation::launch({5, 1, 1}, kGradThreads, 0,
                         [&] { grad_kernel<T>(a, lse.data(), &scale, grad.data()); });
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t v = 0; v < vocab; ++v) m = std::max(m, double(to_float(logits[r * ld + v])));
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(to_float(logits[r * ld + v])) - m);
    const double want = m + std::log(sum);
    ASSERT_NEAR(lse[r], want, 1e-5 * std::max(1.0, std::abs(want))) << "row " << r;
    ASSERT_EQ(target_logit[r], to_float(logits[r * ld + targets[r]])) << "row " << r;
    for (int64_t v = 0; v < vocab; ++v) {
      const double p = std::exp(double(to_float(logits[r * ld + v])) - want) - (v == targets[r] ? 1.0 : 0.0);
      const double got = to_float(grad[r * vocab + v]), exact = p * scale;
      // one rounding to T (2^-8 relative for bf16, 2^-11 fp16) on top of float32 math
      const double tol = std::abs(exact) * (sizeof(T) == 4 ? 1e-5 : 8e-3) + 1e-7;
      ASSERT_NEAR(got, exact, tol) << "row " << r << " v " << v;
    }
  }
}

TEST(LmLossEmulated, RowLseTargetLogitAndSoftmaxGradientEveryDtype) {
  std::mt19937 rng(3);
  check_kernels<float>(5, 1000, 1003, rng);
  check_kernels<__half>(3, 777, 777, rng);
  check_kernels<__nv_bfloat16>(4, 1537, 1600, rng);
}

}  // namespace
}  // namespace musacoder::train::cuda
