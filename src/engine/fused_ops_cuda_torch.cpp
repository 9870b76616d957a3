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

std::pair<torch::Tensor, torch::Tensor> rope_write_kv_cuda(const torch::Tensor& q, const torch::Tensor& k,
                                                           const torch::Tensor& v, const torch::Tensor& cos,
                                                           const torch::Tensor& sin,
                                                           const torch::Tensor& slots, torch::Tensor& k_pages,
                                                           torch::Tensor& v_pages) {
  TORCH_CHECK(q.is_cuda() && q.dim() == 3 && k.dim() == 3 && k.sizes() == v.sizes() &&
                  k.size(0) == q.size(0) && k.size(2) == q.size(2),
              "rope_write_kv_cuda: q (N, H, D), k and v (N, Hkv, D) on CUDA");
  const int64_t N = q.size(0), H = q.size(1), Hkv = k.size(1), D = q.size(2);
  const auto dtype = q.scalar_type();
  TORCH_CHECK(k.scalar_type() == dtype && v.scalar_type() == dtype && cos.scalar_type() == dtype &&
                  sin.scalar_type() == dtype && k_pages.scalar_type() == dtype &&
                  v_pages.scalar_type() == dtype,
              "rope_write_kv_cuda: every tensor in q's dtype");
  TORCH_CHECK(cos.sizes() == torch::IntArrayRef({N, D}) && sin.sizes() == cos.sizes(),
              "rope_write_kv_cuda: cos and sin must be (N, D)");
  TORCH_CHECK(slots.scalar_type() == torch::kLong && slots.numel() == N,
              "rope_write_kv_cuda: slots (N) int64");
  TORCH_CHECK(k_pages.is_contiguous() && v_pages.is_contiguous() && k_pages.dim() == 4 &&
                  k_pages.size(2) == Hkv && k_pages.size(3) == D && v_pages.sizes() == k_pages.sizes(),
              "rope_write_kv_cuda: pages (blocks, block_size, Hkv, D) contiguous");
  const torch::Tensor qd = dense_rows(q), kd = dense_rows(k), vd = dense_rows(v), c = cos.contiguous(),
                      s = sin.contiguous(), sl = slots.contiguous();
  auto q_out = torch::empty(q.sizes(), q.options());
  auto k_out = torch::empty(k.sizes(), k.options());
  RopeKvArgs a;
  a.q_out = q_out.data_ptr(), a.k_out = k_out.data_ptr();
  a.q = qd.data_ptr(), a.k = kd.data_ptr(), a.v = vd.data_ptr();
  a.q_stride = qd.stride(0), a.k_stride = kd.stride(0), a.v_stride = vd.stride(0);
  a.cos = c.data_ptr(), a.sin = s.data_ptr();
  a.slots = sl.data_ptr<int64_t>();
  a.k_pages = k_pages.data_ptr(), a.v_pages = v_pages.data_ptr();
  a.rows = N, a.heads = static_cast<int>(H), a.kv_heads = static_cast<int>(Hkv),
  a.head_dim = static_cast<int>(D);
  a.dtype = kernel_dtype_code(q, "rope_write_kv_cuda");
  check_launch(rope_write_kv_launch(a, stream()), "rope_write_kv_cuda");
  return {q_out, k_out};
}

}  // namespace musacoder::engine
