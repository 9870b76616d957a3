// The projections of a small decode batch (1–4 rows) as one matrix-vector kernel each, with the elementwise
// step in front of the projection computed in the kernel's prologue (decode_linear_cuda.cu):
//   norm      y = RMSNorm(h + delta) · Wᵀ + b, and h + delta written to h_out (add_rms_norm_cuda, then the
//             linear: the q/k/v and gate/up projections, the LM head)
//   silu_mul  y = (silu(gate) · up) · Wᵀ + b (silu_mul_cuda, then the linear: the down projection)
// and, after a fused q/k/v projection with the norm, rope_write_kv's work as the epilogue (RoPE on q and k, k
// and v written into the paged cache): one kernel from the residual stream to the decode kernel's inputs.
// At batch 1 a decode step is one kernel after another (~270 for a 28-layer model), and each costs its
// launch-to-launch gap inside the CUDA graph besides its own time: the norm and SiLU·mul kernels (three a
// layer) read a few kilobytes each and are all gap and latency. Here every block recomputes the prologue for
// its rows into shared memory (the rows are a few kilobytes, read from L2) and then streams its slice of W
// with 16-byte loads, the next slice's loads issued before the current one is used. On sm_90 the kernels are
// launched with programmatic dependent launch: a kernel's first weight loads go out while the kernel before
// it in the stream (or the CUDA graph) finishes, and it reads that kernel's outputs only after
// griddepcontrol.wait (MUSACODER_NO_PDL=1 launches them the ordinary way, for A/B measurements). The o
// projection, which has no prologue, runs here too (decode_linear_cuda, x copied) so that the chain of a
// layer's projections overlaps.
//
// Roundings are the unfused ops': the prologue's result is rounded to the element type exactly as
// add_rms_norm_cuda / silu_mul_cuda round it, h + delta is rounded before the norm, and the product is
// accumulated in float with the bias added before the one rounding to the element type (cuBLAS's bias
// epilogue). Only the order of the float accumulation differs from cuBLAS's.
#pragma once

#include <cstdint>

namespace musacoder::engine {

constexpr int kDecodeLinearMaxRows = 4;

enum class DecodeLinearPrologue : int { kNorm = 0, kSiluMul = 1, kCopy = 2 };

struct DecodeLinearArgs {
  void* y = nullptr;               // (rows, n) contiguous
  const void* weight = nullptr;    // (n, k) contiguous, 16-byte aligned, k · element size a multiple of 16
  const void* bias = nullptr;      // (n) or null
  int64_t rows = 0, n = 0, k = 0;  // rows 1..kDecodeLinearMaxRows
  DecodeLinearPrologue prologue = DecodeLinearPrologue::kNorm;
  // kNorm: h (rows, k) contiguous, delta (rows, k) contiguous or null, norm_weight (k), eps; with delta,
  // round(h + delta) is written to h_out (rows, k) contiguous, which must not overlap h.
  const void* h = nullptr;
  const void* delta = nullptr;
  const void* norm_weight = nullptr;
  void* h_out = nullptr;
  float eps = 0;
  // kSiluMul: gate and up rows of k elements, in_stride elements between rows (e.g. the halves of a fused
  // gate/up product). kCopy: x = gate, rows of k elements in_stride apart, taken as they are.
  const void* gate = nullptr;
  const void* up = nullptr;
  int64_t in_stride = 0;
  // The q/k/v epilogue (rope_write_kv_cuda's, after a fused q/k/v projection): with rope, the n = (heads +
  // 2 · kv_heads) · head_dim outputs are q's heads, then k's, then v's; q and k are rotated by cos/sin
  // (rows, head_dim) as rope_write_kv rotates them, q is written to q_out (rows, heads, head_dim), k and v
  // into k_pages / v_pages (slots, kv_heads, head_dim) at slots[row]; y is not written.
  bool rope = false;
  void* q_out = nullptr;
  const void* cos = nullptr;
  const void* sin = nullptr;
  const int64_t* slots = nullptr;
  void* k_pages = nullptr;
  void* v_pages = nullptr;
  int heads = 0, kv_heads = 0, head_dim = 0;
  int dtype = 0;  // 0 float32, 1 float16, 2 bfloat16
};

// The kernel's dynamic shared memory: the prologue's result, rows × k elements.
inline int64_t decode_linear_shared_bytes(int64_t rows, int64_t k, int dtype) {
  return rows * k * (dtype == 0 ? 4 : 2);
}
// Returns the cudaError_t of the launch (0: success); cudaErrorInvalidValue for arguments outside the
// contract above (rows, alignment, shared memory over the device's per-block limit). stream: a cudaStream_t.
int decode_linear_launch(const DecodeLinearArgs& args, void* stream);

}  // namespace musacoder::engine

#if defined(MUSACODER_ENGINE_CUDA) && !defined(__CUDACC__)
#include <torch/torch.h>

namespace musacoder::engine {
// True when the decode_linear kernels take x rows (rows, k) against this weight: CUDA, 1..4 rows, weight
// (n, k) contiguous, aligned and in a kernel dtype, the prologue's rows within the shared memory limit.
bool decode_linear_takes(int64_t rows, const torch::Tensor& weight);
// y = RMSNorm(h + delta; norm_weight, eps) · weightᵀ + bias; when delta is defined h becomes h + delta (a
// new tensor), as add_rms_norm_cuda leaves it. h (rows, k) on CUDA; delta like h or undefined.
torch::Tensor norm_linear_cuda(torch::Tensor& h, const torch::Tensor& delta, const torch::Tensor& norm_weight,
                               double eps, const torch::Tensor& weight, const torch::Tensor& bias);
// The fused q/k/v projection of a decode step with the norm before it and rope_write_kv after it: h, delta,
// norm_weight, eps, weight, bias as norm_linear_cuda (weight: (heads + 2 · kv_heads) · head_dim rows); cos,
// sin (rows, head_dim) and the pages in h's dtype; slots (rows) int64; k_pages, v_pages (blocks, block_size,
// kv_heads, head_dim) contiguous. Returns the rotated q (rows, heads, head_dim) and writes the rotated k and
// v into the pages at the slots.
torch::Tensor norm_qkv_rope_cuda(torch::Tensor& h, const torch::Tensor& delta,
                                 const torch::Tensor& norm_weight, double eps, const torch::Tensor& weight,
                                 const torch::Tensor& bias, int heads, int kv_heads, int head_dim,
                                 const torch::Tensor& cos, const torch::Tensor& sin,
                                 const torch::Tensor& slots, torch::Tensor& k_pages, torch::Tensor& v_pages);
// y = x · weightᵀ + bias; x (rows, k) with dense rows.
torch::Tensor decode_linear_cuda(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& bias);
// y = silu_mul(gate, up) · weightᵀ + bias; gate and up (rows, k) with the same strides, each row dense.
torch::Tensor silu_mul_linear_cuda(const torch::Tensor& gate, const torch::Tensor& up,
                                   const torch::Tensor& weight, const torch::Tensor& bias);
}  // namespace musacoder::engine
#endif
