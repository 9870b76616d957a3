// CUDA kernels of the chunked LM-head cross-entropy (train/common/lm_loss.h) for one chunk of logits: what
// libtorch does there in ~6 passes over a (rows, V) float32 copy of the logits, each in one pass over the
// logits as the LM-head matmul wrote them. Plain C++ interface (no libtorch in the .cu);
// train/common/lm_loss_cuda.cpp wraps it. Every pointer is device memory; logits are (rows, vocab) with row
// stride `ld`, of `dtype` (0 float32, 1 float16, 2 bfloat16); targets are int64 in [0, vocab).
//   lm_loss_rows: per row, lse = log Σ_v exp(logit_v) (float32, online max and sum) and the target's logit.
//   lm_loss_grad: grad = (exp(logit − lse[row]) − [v == target[row]]) · scale[0], rounded to `dtype` once,
//   into
//                 a contiguous (rows, vocab) buffer — torch's (exp(float(logit) − lse) − onehot) · g then the
//                 cast.
// Each returns the cudaError_t of its launch (0: success).
#pragma once

#include <cstdint>

namespace musacoder::train::cuda {

struct LmLogits {
  const void* data = nullptr;
  int dtype = 0;
  int64_t rows = 0, vocab = 0, ld = 0;
  const int64_t* targets = nullptr;
};

int lm_loss_rows(const LmLogits& logits, float* lse, float* target_logit, void* stream);
int lm_loss_grad(const LmLogits& logits, const float* lse, const float* scale, void* grad, void* stream);

}  // namespace musacoder::train::cuda
