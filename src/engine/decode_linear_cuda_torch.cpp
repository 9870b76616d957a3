// libtorch side of the decode-batch projections (CUDA builds only): checks, outputs, current stream.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>

#include "engine/decode_linear_cuda.h"
#include "model/kernel_dtype.h"

namespace musacoder::engine {
namespace {

void* stream() {
  return c10::cuda::getCurrentCUDAStream().stream();
}

// The linear's part of the arguments; checks what decode_linear_takes checks and that x matches.
DecodeLinearArgs linear_args(const torch::Tensor& x_like, const torch::Tensor& weight,
                             const torch::Tensor& bias, const char* who) {
  TORCH_CHECK(x_like.dim() == 2 && decode_linear_takes(x_like.size(0), weight) &&
                  x_like.scalar_type() == weight.scalar_type() && x_like.device() == weight.device() &&
                  x_like.size(1) == weight.size(1),
              who, ": operands outside decode_linear_takes (1..4 rows on CUDA, aligned weight)");
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0) && bias.is_contiguous() &&
                                  bias.scalar_type() == weight.scalar_type()),
              who, ": bias must be (out) in the weight's dtype");
  DecodeLinearArgs a;
  a.weight = weight.data_ptr();
  a.bias = bias.defined() ? bias.data_ptr() : nullptr;
  a.rows = x_like.size(0), a.n = weight.size(0), a.k = weight.size(1);
  a.dtype = model::kernel_dtype_code(weight, who);
  return a;
}

void launch(const DecodeLinearArgs& a, const char* who) {
  const int err = decode_linear_launch(a, stream());
  TORCH_CHECK(err == 0, who, ": launch failed (cudaError ", err, ")");
}

torch::Tensor launch_y(DecodeLinearArgs& a, const torch::Tensor& weight, const char* who) {
  auto y = torch::empty({a.rows, a.n}, weight.options());
  a.y = y.data_ptr();
  launch(a, who);
  return y;
}

// The norm prologue's arguments (and h's new tensor when delta is defined, else h itself).
torch::Tensor set_norm(DecodeLinearArgs& a, const torch::Tensor& h, const torch::Tensor& delta,
                       const torch::Tensor& norm_weight, double eps, const char* who) {
  TORCH_CHECK(norm_weight.dim() == 1 && norm_weight.size(0) == h.size(1) && norm_weight.is_contiguous() &&
                  norm_weight.scalar_type() == h.scalar_type() && norm_weight.device() == h.device(),
              who, ": norm weight must be (hidden) in h's dtype");
  TORCH_CHECK(!delta.defined() || (delta.sizes() == h.sizes() && delta.scalar_type() == h.scalar_type() &&
                                   delta.device() == h.device()),
              who, ": delta must match h");
  const torch::Tensor hc = h.contiguous(), dc = delta.defined() ? delta.contiguous() : delta;
  torch::Tensor h_out = delta.defined() ? torch::empty_like(hc) : hc;
  a.prologue = DecodeLinearPrologue::kNorm;
  a.h = hc.data_ptr();
  a.delta = dc.defined() ? dc.data_ptr() : nullptr;
  a.norm_weight = norm_weight.data_ptr();
  a.h_out = dc.defined() ? h_out.data_ptr() : nullptr;
  a.eps = static_cast<float>(eps);
  return h_out;
}

}  // namespace

bool decode_linear_takes(int64_t rows, const torch::Tensor& weight) {
  if (rows < 1 || rows > kDecodeLinearMaxRows || !weight.is_cuda() || weight.dim() != 2 ||
      !weight.is_contiguous() || !model::kernel_dtype_supported(weight.scalar_type()))
    return false;
  const int64_t element = weight.element_size(), k = weight.size(1);
  if ((k * element) % 16 != 0 || reinterpret_cast<uintptr_t>(weight.data_ptr()) % 16 != 0) return false;
  const int dtype = model::kernel_dtype_code(weight, "decode_linear_takes");
  const int64_t limit = static_cast<int64_t>(at::cuda::getCurrentDeviceProperties()->sharedMemPerBlockOptin);
  return decode_linear_shared_bytes(rows, k, dtype) + 1024 <= limit;  // + the kernel's static reduction array
}

torch::Tensor norm_linear_cuda(torch::Tensor& h, const torch::Tensor& delta, const torch::Tensor& norm_weight,
                               double eps, const torch::Tensor& weight, const torch::Tensor& bias) {
  const char* who = "norm_linear_cuda";
  DecodeLinearArgs a = linear_args(h, weight, bias, who);
  torch::Tensor h_out = set_norm(a, h, delta, norm_weight, eps, who);
  torch::Tensor y = launch_y(a, weight, who);
  if (delta.defined()) h = h_out;
  return y;
}

torch::Tensor norm_qkv_rope_cuda(torch::Tensor& h, const torch::Tensor& delta,
                                 const torch::Tensor& norm_weight, double eps, const torch::Tensor& weight,
                                 const torch::Tensor& bias, int heads, int kv_heads, int head_dim,
                                 const torch::Tensor& cos, const torch::Tensor& sin,
                                 const torch::Tensor& slots, torch::Tensor& k_pages, torch::Tensor& v_pages) {
  const char* who = "norm_qkv_rope_cuda";
  DecodeLinearArgs a = linear_args(h, weight, bias, who);
  const int64_t rows = h.size(0);
  TORCH_CHECK(heads >= 1 && kv_heads >= 1 && head_dim >= 2 && head_dim % 2 == 0 &&
                  weight.size(0) == static_cast<int64_t>(heads + 2 * kv_heads) * head_dim,
              who, ": the weight must have (heads + 2 kv_heads) head_dim rows");
  TORCH_CHECK(cos.dim() == 2 && cos.size(0) == rows && cos.size(1) == head_dim &&
                  sin.sizes() == cos.sizes() && cos.is_contiguous() && sin.is_contiguous() &&
                  cos.scalar_type() == h.scalar_type() && sin.scalar_type() == h.scalar_type(),
              who, ": cos and sin must be (rows, head_dim) contiguous in h's dtype");
  TORCH_CHECK(slots.dim() == 1 && slots.size(0) == rows && slots.scalar_type() == torch::kLong &&
                  slots.is_contiguous() && slots.device() == h.device(),
              who, ": slots must be (rows) int64 on h's device");
  for (const torch::Tensor* p : {&k_pages, &v_pages})
    TORCH_CHECK(p->dim() == 4 && p->size(2) == kv_heads && p->size(3) == head_dim && p->is_contiguous() &&
                    p->scalar_type() == h.scalar_type() && p->device() == h.device(),
                who, ": pages must be (blocks, block_size, kv_heads, head_dim) contiguous in h's dtype");
  torch::Tensor h_out = set_norm(a, h, delta, norm_weight, eps, who);
  torch::Tensor q = torch::empty({rows, heads, head_dim}, h.options());
  a.rope = true;
  a.q_out = q.data_ptr();
  a.cos = cos.data_ptr(), a.sin = sin.data_ptr(), a.slots = slots.data_ptr<int64_t>();
  a.k_pages = k_pages.data_ptr(), a.v_pages = v_pages.data_ptr();
  a.heads = heads, a.kv_heads = kv_heads, a.head_dim = head_dim;
  launch(a, who);
  if (delta.defined()) h = h_out;
  return q;
}

torch::Tensor decode_linear_cuda(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& bias) {
  const char* who = "decode_linear_cuda";
  DecodeLinearArgs a = linear_args(x, weight, bias, who);
  TORCH_CHECK(x.stride(1) == 1, who, ": x must have dense rows");
  a.prologue = DecodeLinearPrologue::kCopy;
  a.gate = x.data_ptr();
  a.in_stride = x.size(0) == 1 ? x.size(1) : x.stride(0);
  return launch_y(a, weight, who);
}

torch::Tensor silu_mul_linear_cuda(const torch::Tensor& gate, const torch::Tensor& up,
                                   const torch::Tensor& weight, const torch::Tensor& bias) {
  const char* who = "silu_mul_linear_cuda";
  DecodeLinearArgs a = linear_args(gate, weight, bias, who);
  TORCH_CHECK(up.sizes() == gate.sizes() && up.scalar_type() == gate.scalar_type() &&
                  up.device() == gate.device() && up.stride(0) == gate.stride(0) && gate.stride(1) == 1 &&
                  up.stride(1) == 1,
              who, ": gate and up must be (rows, k) with dense rows and the same row stride");
  a.prologue = DecodeLinearPrologue::kSiluMul;
  a.gate = gate.data_ptr();
  a.up = up.data_ptr();
  a.in_stride = gate.size(0) == 1 ? gate.size(1) : gate.stride(0);
  return launch_y(a, weight, who);
}

}  // namespace musacoder::engine
