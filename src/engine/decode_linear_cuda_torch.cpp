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

torch::Tensor launch(DecodeLinearArgs& a, const torch::Tensor& weight, const char* who) {
  auto y = torch::empty({a.rows, a.n}, weight.options());
  a.y = y.data_ptr();
  const int err = decode_linear_launch(a, stream());
  TORCH_CHECK(err == 0, who, ": launch failed (cudaError ", err, ")");
  return y;
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
  torch::Tensor y = launch(a, weight, who);
  if (delta.defined()) h = h_out;
  return y;
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
  return launch(a, weight, who);
}

}  // namespace musacoder::engine
