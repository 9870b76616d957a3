// The SwiGLU product of the MLPs (Llama/Qwen2/Qwen3 and Qwen3.5): silu(gate) · up.
//   swiglu(gate, up, fused): with `fused` set, CUDA tensors of float32/float16/bfloat16 and the model kernels
//   built (delta_rule_cuda_kernels_built()), one kernel forward and one backward
//   (model/cuda/swiglu_kernels.h: torch's roundings, so the values are those of the ops) that save only gate
//   and up — the ops run silu, mul and three backward kernels and also keep silu(gate). Otherwise
//   torch::silu(gate) * up. The trainers set `fused` on CUDA (train::use_fused_ops); inference keeps the ops
//   (the engine has its own fused kernels).
#pragma once

#include <ATen/ATen.h>

namespace musacoder::model {

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up, bool fused);

}  // namespace musacoder::model
