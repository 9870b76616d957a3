// One CUDA kernel for the whole AdamW step of low-precision parameters with float32 masters
// (train/common/optimizer.h): per element it reads the gradient as the backward left it (bfloat16 or float16,
// or the float32 accumulation of several backwards), divides it by the clipping factor, updates the float32
// master and moments exactly as torch's _fused_adamw_ does, and writes the master rounded into the parameter
// — one pass where the torch path takes four (the gradient's cast into float32, the fused update, the
// masters' copy back, and a fill), 28 bytes per element instead of ~40. Plain C++ interface (no libtorch in
// the .cu); train/common/adamw_cuda.cpp wraps it. Every pointer is device memory.
//
// Per element (AdamW, decoupled decay; torch.optim.AdamW's fused kernel, opmath float32):
//   g ← grad / grad_scale (when set);  p ← p − lr·wd·p;  m ← β1 m + (1 − β1) g;  v ← β2 v + (1 − β2) g²;
//   p ← p − (lr / bias1) · m / (sqrt(v) / sqrt(bias2) + ε);  param ← round(p)
// with bias1 = 1 − β1ᵗ, bias2 = 1 − β2ᵗ computed by the caller for this step t.
#pragma once

#include <cstdint>

namespace musacoder::train::cuda {

constexpr int kAdamWThreads = 256;
constexpr int64_t kAdamWBlockElems = 4096;  // elements per block: a tensor of n takes ceil(n / 4096) blocks

struct AdamWTensor {
  void* param = nullptr;        // (n), the launch's param_dtype
  float* master = nullptr;      // (n)
  float* exp_avg = nullptr;     // (n)
  float* exp_avg_sq = nullptr;  // (n)
  const void* grad = nullptr;   // (n), grad_dtype
  int64_t n = 0;
  float weight_decay = 0.f;  // 0 for tensors without decay
};

struct AdamWLaunch {
  const AdamWTensor* tensors = nullptr;  // (count), device memory
  const int64_t* first_block =
      nullptr;  // (count + 1): tensor i takes blocks [first_block[i], first_block[i+1])
  int count = 0;
  int64_t blocks = 0;   // first_block[count]
  int param_dtype = 2;  // 1 float16, 2 bfloat16
  int grad_dtype = 0;   // every tensor's gradient: 0 float32, 1 float16, 2 bfloat16
  float lr = 0.f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float step_size = 0.f;              // lr / bias1
  float bias2_sqrt = 1.f;             // sqrt(bias2)
  const float* grad_scale = nullptr;  // one float (the clipping divisor) or null
};

// Returns the cudaError_t of the launch (0: success); stream: a cudaStream_t.
int adamw_launch(const AdamWLaunch& a, void* stream);

}  // namespace musacoder::train::cuda
