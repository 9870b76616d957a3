// Fused elementwise steps of a decoder layer for the engine's CUDA forwards (fused_ops_cuda.cu), one kernel
// each where transformers' module ops run 2–9: a decode step's time, flat in the batch, points at the number
// of kernels per layer (docs/engine.md). Each equals its module op for op, with the same roundings to the
// element type:
//   add_rms_norm  h ← round(h + delta) (no delta: h unchanged), then
//                 out = w · round(h · rsqrt(mean(h²) + eps)) in float (model::RMSNormImpl); one block per row
//   silu_mul      out = round(round(silu(gate)) · up) (model::MlpImpl's silu(gate(x)) * up(x))
//   rope          out = round(round(x · cos) + round(rotate_half(x) · sin)), cos/sin (N, D) broadcast over
//                 the heads of x (N, H, D) (the engine's rotate())
//   rope_write_kv rope on q and on k, and k (rotated) and v written into the paged cache at their slots: the
//                 two ropes and two index_copy_ of a layer's step in one kernel (write_kv's values exactly)
// The launchers take raw pointers so the .cu needs no libtorch headers; the libtorch wrappers below are
// compiled with CUDA libtorch only (MUSACODER_ENGINE_CUDA).
#pragma once

#include <cstdint>

namespace musacoder::engine {

struct FusedArgs {
  void* out = nullptr;           // add_rms_norm, silu_mul, rope: the result (contiguous)
  void* h = nullptr;             // add_rms_norm: (rows, cols) updated in place when delta is given; rope: x
  const void* delta = nullptr;   // add_rms_norm: (rows, cols) or null; silu_mul: gate
  const void* weight = nullptr;  // add_rms_norm: (cols); silu_mul: up
  const void* cos = nullptr;     // rope: (rows, head_dim)
  const void* sin = nullptr;
  int64_t rows = 0, cols = 0;  // add_rms_norm: rows × cols; silu_mul: rows × cols elements; rope: N × (H · D)
  int64_t in_stride = 0;  // silu_mul: elements between rows of gate and of up; rope: of x (each row dense)
  int head_dim = 0;            // rope
  float eps = 0;
  int dtype = 0;  // 0 float32, 1 float16, 2 bfloat16
};

struct RopeKvArgs {
  void* q_out = nullptr;    // (rows, heads, head_dim) contiguous
  void* k_out = nullptr;    // (rows, kv_heads, head_dim) contiguous
  const void* q = nullptr;  // rows of heads × head_dim, q_stride elements apart (each row dense)
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0;
  const void* cos = nullptr;  // (rows, head_dim)
  const void* sin = nullptr;
  const int64_t* slots = nullptr;  // (rows): the cache slot of each row
  void* k_pages = nullptr;         // (slots, kv_heads, head_dim) contiguous, q's dtype
  void* v_pages = nullptr;
  int64_t rows = 0;
  int heads = 0, kv_heads = 0, head_dim = 0;
  int dtype = 0;
};

// Each returns the cudaError_t of its launch (0: success). stream: a cudaStream_t.
int add_rms_norm_launch(const FusedArgs& args, void* stream);
int silu_mul_launch(const FusedArgs& args, void* stream);
int rope_launch(const FusedArgs& args, void* stream);
int rope_write_kv_launch(const RopeKvArgs& args, void* stream);

}  // namespace musacoder::engine

#if defined(MUSACODER_ENGINE_CUDA) && !defined(__CUDACC__)
#include <torch/torch.h>

#include <utility>

namespace musacoder::engine {
// h (..., C) on CUDA, updated in place by delta (same shape) when delta is defined (then contiguous; without
// delta any layout); weight: (C).
torch::Tensor add_rms_norm_cuda(torch::Tensor& h, const torch::Tensor& delta, const torch::Tensor& weight,
                                double eps);
// gate, up (N, I): the same shape, dtype and strides, each row dense (e.g. the two halves of a fused
// product).
torch::Tensor silu_mul_cuda(const torch::Tensor& gate, const torch::Tensor& up);
// x (N, H, D), each row dense (x.stride(1) == D; e.g. a column block of a fused q/k/v product); cos, sin (N,
// D) in x's dtype.
torch::Tensor rope_cuda(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
// q (N, H, D), k and v (N, Hkv, D), each row dense; cos, sin (N, D); slots (N) int64; k_pages, v_pages
// (blocks, block_size, Hkv, D) contiguous, all in q's dtype. Returns the rotated q and k (contiguous) and
// writes the rotated k and v into the pages at the slots: rope_cuda twice and write_kv in one kernel.
std::pair<torch::Tensor, torch::Tensor> rope_write_kv_cuda(const torch::Tensor& q, const torch::Tensor& k,
                                                           const torch::Tensor& v, const torch::Tensor& cos,
                                                           const torch::Tensor& sin,
                                                           const torch::Tensor& slots, torch::Tensor& k_pages,
                                                           torch::Tensor& v_pages);
}  // namespace musacoder::engine
#endif
