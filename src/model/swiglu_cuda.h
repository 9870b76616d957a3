// Internal to src/model: the CUDA SwiGLU (model/cuda/swiglu_kernels.h) as a differentiable op. Built only
// with MUSACODER_HAVE_CUDA_KERNELS (see src/model/CMakeLists.txt).
#pragma once

#include <ATen/ATen.h>

namespace musacoder::model::detail {

// gate and up: CUDA, one shape and one dtype of float32/float16/bfloat16.
bool cuda_swiglu_takes(const at::Tensor& gate, const at::Tensor& up);
// silu(gate) · up, differentiable in both (custom backward saving gate and up).
at::Tensor cuda_swiglu(const at::Tensor& gate, const at::Tensor& up);

}  // namespace musacoder::model::detail
