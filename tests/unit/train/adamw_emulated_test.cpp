// The one-pass AdamW kernel (src/train/common/cuda/adamw_kernels.cu), run as written on the CPU through
// tests/support/cuda_emulation.h, against torch.optim.AdamW's update (adamw_kernels.h) in double: several
// tensors of sizes that do and do not fill their last block, decay on some, a clipping divisor or none,
// bfloat16 / float16 parameters, bfloat16 / float16 / float32 gradients, a few steps. The parameter must be
// the master rounded to its dtype, bit for bit. The CUDA test AdamW.OnePassKernelEqualsTheTorchPath
// (train_unit_tests) runs it through AdamW on a device against the torch path.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "support/cuda_emulation.h"
#define MUSACODER_CUDA_EMULATION
#include "train/common/cuda/adamw_kernels.cu"

namespace musacoder::train::cuda {
namespace {

struct Ref {  // one tensor's state in double
  std::vector<double> p, m, v;
};

template <typename P, typename G>
double run_case(int grad_dtype, bool clip, std::mt19937& rng) {
  const std::vector<int64_t> sizes = {1, 4095, 4096, 4097, 9000};
  const std::vector<float> decays = {0.f, 0.1f, 0.f, 0.01f, 0.1f};
  std::normal_distribution<float> normal;
  std::vector<std::vector<P>> params(sizes.size());
  std::vector<std::vector<float>> master(sizes.size()), m(sizes.size()), v(sizes.size());
  std::vector<std::vector<G>> grads(sizes.size());
  std::vector<Ref> ref(sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k) {
    for (int64_t i = 0; i < sizes[k]; ++i) {
      const float p = round_to<P>(normal(rng) * 0.05f);
      master[k].push_back(p), params[k].push_back(from_float<P>(p));
      m[k].push_back(0.f), v[k].push_back(0.f);
      ref[k].p.push_back(p), ref[k].m.push_back(0), ref[k].v.push_back(0);
    }
    grads[k].resize(static_cast<size_t>(sizes[k]));
  }
  std::vector<AdamWTensor> tensors;
  std::vector<int64_t> first = {0};
  for (size_t k = 0; k < sizes.size(); ++k) {
    tensors.push_back(
        {params[k].data(), master[k].data(), m[k].data(), v[k].data(), grads[k].data(), sizes[k], decays[k]});
    first.push_back(first.back() + (sizes[k] + kAdamWBlockElems - 1) / kAdamWBlockElems);
  }
  const double lr = 1e-3, b1 = 0.9, b2 = 0.95, eps = 1e-8, scale = 2.5;
  const float scale_f = static_cast<float>(scale);
  double worst = 0;
  for (int step = 1; step <= 3; ++step) {
    for (size_t k = 0; k < sizes.size(); ++k)
      for (auto& g : grads[k]) g = from_float<G>(normal(rng) * 0.02f);
    const double bias1 = 1 - std::pow(b1, step), bias2 = 1 - std::pow(b2, step);
    AdamWLaunch a;
    a.tensors = tensors.data(), a.first_block = first.data(), a.count = static_cast<int>(tensors.size());
    a.blocks = first.back(), a.param_dtype = sizeof(P) == 2 && std::is_same_v<P, __half> ? 1 : 2;
    a.grad_dtype = grad_dtype;
    a.lr = float(lr), a.beta1 = float(b1), a.beta2 = float(b2), a.eps = float(eps);
    a.step_size = float(lr / bias1), a.bias2_sqrt = float(std::sqrt(bias2));
    a.grad_scale = clip ? &scale_f : nullptr;
    cuda_emulation::launch({static_cast<unsigned>(a.blocks), 1, 1}, kAdamWThreads, 0,
                           [&] { adamw_kernel<P, G>(a); });
    for (size_t k = 0; k < sizes.size(); ++k) {
      for (int64_t i = 0; i < sizes[k]; ++i) {
        Ref& r = ref[k];
        const double g = to_float(grads[k][i]) / (clip ? scale : 1.0);
        r.p[i] -= lr * decays[k] * r.p[i];
        r.m[i] = b1 * r.m[i] + (1 - b1) * g;
        r.v[i] = b2 * r.v[i] + (1 - b2) * g * g;
        r.p[i] -= lr / bias1 * r.m[i] / (std::sqrt(r.v[i]) / std::sqrt(bias2) + eps);
        worst = std::max(worst, std::abs(master[k][i] - r.p[i]) / lr);  // in units of one step's size
        worst = std::max(worst, std::abs(m[k][i] - r.m[i]) / 0.02);
        // the parameter is the master rounded, bit for bit
        if (to_float(params[k][i]) != round_to<P>(master[k][i])) return INFINITY;
      }
    }
  }
  return worst;
}

TEST(AdamWEmulated, OnePassUpdateEqualsTorchAdamWInDouble) {
  std::mt19937 rng(11);
  struct Run {
    const char* what;
    double err;
  };
  const std::vector<Run> runs = {
      {"bf16 params, bf16 grads", run_case<__nv_bfloat16, __nv_bfloat16>(2, false, rng)},
      {"bf16 params, bf16 grads, clipped", run_case<__nv_bfloat16, __nv_bfloat16>(2, true, rng)},
      {"bf16 params, fp32 grads (accumulated)", run_case<__nv_bfloat16, float>(0, true, rng)},
      {"fp16 params, fp16 grads", run_case<__half, __half>(1, false, rng)},
      {"fp16 params, fp32 grads, clipped", run_case<__half, float>(0, true, rng)},
  };
  for (const auto& r : runs) {
    // float32 math against double: a few float32 roundings of one step's size
    EXPECT_LE(r.err, 1e-4) << r.what;
    std::printf("%-40s max error %.3g (of one step's size)\n", r.what, r.err);
  }
}

}  // namespace
}  // namespace musacoder::train::cuda
