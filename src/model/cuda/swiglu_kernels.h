// CUDA kernels of the SwiGLU product silu(gate) · up (model/swiglu.h) and its gradient, each one pass over
// its tensors, with torch's roundings (the ops they replace: silu, mul, and autograd's mul and silu
// backward):
//   forward:  s = round(silu(g)), out = round(s · u)                    (silu(g) = g / (1 + e^−g))
//   backward: du = round(grad · s), ds = round(grad · u),
//             dg = round(ds · σ · (1 + g · (1 − σ)))                    (σ = 1 / (1 + e^−g))
// round(): to the tensors' dtype (0 float32, 1 float16, 2 bfloat16), from float32 math. Plain C++ interface
// (no libtorch in the .cu); model/swiglu_cuda.cpp wraps it. All pointers device memory, contiguous, n
// elements. Each returns the cudaError_t of its launch (0: success).
#pragma once

#include <cstdint>

#include "model/cuda/delta_rule_kernels.h"  // Stream

namespace musacoder::model::cuda {

struct SwigluArgs {
  int dtype = 0;
  int64_t n = 0;
  const void* gate = nullptr;
  const void* up = nullptr;
  void* out = nullptr;         // forward
  const void* grad = nullptr;  // backward: the gradient of out
  void* d_gate = nullptr;
  void* d_up = nullptr;
};

int swiglu_forward(const SwigluArgs& a, Stream stream);
int swiglu_backward(const SwigluArgs& a, Stream stream);

}  // namespace musacoder::model::cuda
