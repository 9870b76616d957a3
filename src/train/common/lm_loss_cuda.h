// Internal to src/train: the CUDA kernels behind lm_loss.cpp's chunks (train/common/cuda/lm_loss_kernels.h).
// Built only with MUSACODER_HAVE_TRAIN_CUDA_KERNELS (src/train/CMakeLists.txt).
#pragma once

#include <ATen/ATen.h>

namespace musacoder::train::detail {

// Whether the kernels take this chunk of logits: on CUDA, (rows, V) with unit column stride, float32, float16
// or bfloat16, targets int64 on the same device.
bool cuda_lm_kernels_take(const at::Tensor& logits, const at::Tensor& targets);

// lse (rows) and the target logits (rows), float32, of logits (rows, V) as stored.
std::pair<at::Tensor, at::Tensor> cuda_lm_rows(const at::Tensor& logits, const at::Tensor& targets);

// (softmax(logits) − onehot(targets)) · scale, in the logits' dtype (rows, V); lse from cuda_lm_rows, scale a
// one-element float32 tensor on the device (the loss's incoming gradient).
at::Tensor cuda_lm_grad(const at::Tensor& logits, const at::Tensor& targets, const at::Tensor& lse,
                        const at::Tensor& scale);

// Whether cuda_accumulate_at_b takes these: acc (V, C) float32 contiguous on CUDA; a (rows, V) and b (rows,
// C) of one 16-bit float dtype on acc's device, unit column strides.
bool cuda_accumulate_takes(const at::Tensor& acc, const at::Tensor& a, const at::Tensor& b);

// acc += aᵀ b in one cuBLAS GEMM that accumulates into the float32 matrix (beta = 1): the LM head's weight
// gradient over the loss's chunks, without a 16-bit (V, C) product and a float32 add of it per chunk.
void cuda_accumulate_at_b(at::Tensor& acc, const at::Tensor& a, const at::Tensor& b);

}  // namespace musacoder::train::detail
