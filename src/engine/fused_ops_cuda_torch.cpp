// libtorch side of the fused decoder-layer kernels (CUDA builds only): checks, outputs, current stream.
#include <c10/cuda/CUDAStream.h>

#include "engine/fused_ops_cuda.h"
#include "engine/paged_attention_cuda.h"

namespace musacoder::engine {
namespace {

void check_launch(int err, const char* what) {
  TORCH_CHECK(err == 0, what, ": launch failed (cudaError ", err, ")");
}

void* stream() {
  return c10::cuda::getCurrentCUDAStream().stream();
}

}  // namespace

torch::Tensor add_rms_norm_cuda(torch::Tensor& h, const torch::Tensor& delta, const torch::Tensor& weight,
                                double eps) {
  TORCH_CHECK(h.is_cuda() && h.is_contiguous() && h.dim() >= 1,
              "add_rms_norm_cuda: h must be contiguous on CUDA");
  const int64_t C = h.size(-1);
  TORCH_CHECK(weight.numel() == C && weight.scalar_type() == h.scalar_type(),
              "add_rms_norm_cuda: bad weight");
  const torch::Tensor d = delta.defined() ? delta.contiguous() : torch::Tensor();
  TORCH_CHECK(!d.defined() || (d.sizes() == h.sizes() && d.scalar_type() == h.scalar_type()),
              "add_rms_norm_cuda: delta must match h");
  const torch::Tensor w = weight.contiguous();
  auto out = torch::empty_like(h);
  FusedArgs a;
  a.out = out.data_ptr();
  a.h = h.data_ptr();
  a.delta = d.defined() ? d.data_ptr() : nullptr;
  a.weight = w.data_ptr();
  a.rows = C == 0 ? 0 : h.numel() / C, a.cols = C;
  a.eps = static_cast<float>(eps);
  a.dtype = kernel_dtype_code(h, "add_rms_norm_cuda");
  check_launch(add_rms_norm_launch(a, stream()), "add_rms_norm_cuda");
  return out;
}

torch::Tensor silu_mul_cuda(const torch::Tensor& gate, const torch::Tensor& up) {
  TORCH_CHECK(gate.is_cuda() && gate.sizes() == up.sizes() && gate.scalar_type() == up.scalar_type(),
              "silu_mul_cuda: gate and up must match on CUDA");
  const torch::Tensor g = gate.contiguous(), u = up.contiguous();
  auto out = torch::empty_like(g);
  FusedArgs a;
  a.out = out.data_ptr();
  a.delta = g.data_ptr();
  a.weight = u.data_ptr();
  a.rows = 1, a.cols = g.numel();
  a.dtype = kernel_dtype_code(g, "silu_mul_cuda");
  check_launch(silu_mul_launch(a, stream()), "silu_mul_cuda");
  return out;
}

torch::Tensor rope_cuda(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 3, "rope_cuda: x must be (N, H, D) on CUDA");
  const int64_t N = x.size(0), H = x.size(1), D = x.size(2);
  TORCH_CHECK(cos.sizes() == torch::IntArrayRef({N, D}) && sin.sizes() == cos.sizes() &&
                  cos.scalar_type() == x.scalar_type() && sin.scalar_type() == x.scalar_type(),
              "rope_cuda: cos and sin must be (N, D) in x's dtype");
  const torch::Tensor xc = x.contiguous(), c = cos.contiguous(), s = sin.contiguous();
  auto out = torch::empty_like(xc);
  FusedArgs a;
  a.out = out.data_ptr();
  a.h = xc.data_ptr();
  a.cos = c.data_ptr();
  a.sin = s.data_ptr();
  a.rows = N, a.cols = H * D;
  a.head_dim = static_cast<int>(D);
  a.dtype = kernel_dtype_code(xc, "rope_cuda");
  check_launch(rope_launch(a, stream()), "rope_cuda");
  return out;
}

}  // namespace musacoder::engine
