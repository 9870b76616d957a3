// The element-type code that the project's CUDA kernels take in their argument structs (core/cuda_dtype.cuh's
// launch_by_dtype): 0 float32, 1 float16, 2 bfloat16 — for the libtorch wrappers of the model's, the engine's
// and the trainers' kernels. Header-only.
#pragma once

#include <ATen/ATen.h>

namespace musacoder::model {

inline bool kernel_dtype_supported(at::ScalarType s) {
  return s == at::kFloat || s == at::kHalf || s == at::kBFloat16;
}

// t's code; any other dtype fails a TORCH_CHECK whose message starts with `who`.
inline int kernel_dtype_code(const at::Tensor& t, const char* who) {
  const at::ScalarType s = t.scalar_type();
  TORCH_CHECK(kernel_dtype_supported(s), who, ": dtype must be float32, float16 or bfloat16");
  return s == at::kFloat ? 0 : (s == at::kHalf ? 1 : 2);
}

}  // namespace musacoder::model
