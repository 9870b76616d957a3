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

// x viewed as (rows, cols) with dense rows: itself, or a contiguous copy when its rows are not dense.
torch::Tensor dense_rows(const torch::Tensor& x) {
  if (x.dim() < 1 || x.numel() == 0) return x.contiguous();
  int64_t expect = 1;
  for (int64_t d = x.dim() - 1; d >= 1; --d) {
    if (x.size(d) != 1 && x.stride(d) != expect) return x.contiguous();
    expect *= x.size(d);
  }
  return x;
}

}  // namespace

torch::Tensor add_rms_norm_cuda(torch::Tensor& h, const torch::Tensor& delta, const torch::Tensor& weight,
                                double eps) {
  TORCH_CHECK(h.is_cuda() && h.dim() >= 1 && (h.is_contiguous() || !delta.defined()),
              "add_rms_norm_cuda: h must be on CUDA, and contiguous when it is updated");
  if (!h.is_contiguous()) {  // only read (no delta): e.g. the q/k views of a fused projection under q/k norm
    torch::Tensor dense = h.contiguous();
    return add_rms_norm_cuda(dense, delta, weight, eps);
  }
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
  TORCH_CHECK(gate.is_cuda() && gate.dim() >= 1 && gate.sizes() == up.sizes() &&
                  gate.scalar_type() == up.scalar_type(),
              "silu_mul_cuda: gate and up must match on CUDA");
  torch::Tensor g = dense_rows(gate), u = dense_rows(up);
  if (g.stride(0) != u.stride(0)) g = g.contiguous(), u = u.contiguous();
  auto out = torch::empty(gate.sizes(), gate.options());
  FusedArgs a;
  a.out = out.data_ptr();
  a.delta = g.data_ptr();
  a.weight = u.data_ptr();
  a.rows = g.size(0), a.cols = g.size(0) == 0 ? 0 : g.numel() / g.size(0);
  a.in_stride = g.dim() == 1 ? a.cols : g.stride(0);
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
  const torch::Tensor xc = dense_rows(x), c = cos.contiguous(), s = sin.contiguous();
  auto out = torch::empty(x.sizes(), x.options());
  FusedArgs a;
  a.out = out.data_ptr();
  a.h = xc.data_ptr();
  a.in_stride = xc.stride(0);
  a.cos = c.data_ptr();
  a.sin = s.data_ptr();
  a.rows = N, a.cols = H * D;
  a.head_dim = static_cast<int>(D);
  a.dtype = kernel_dtype_code(xc, "rope_cuda");
  check_launch(rope_launch(a, stream()), "rope_cuda");
  return out;
}

}  // namespace musacoder::engine
