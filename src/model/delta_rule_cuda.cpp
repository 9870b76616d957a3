#include "model/delta_rule_cuda.h"

#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/torch.h>

#include <cmath>

#include "model/cuda/delta_rule_kernels.h"
#include "model/kernel_dtype.h"

namespace musacoder::model::detail {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

cuda::Stream current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

void check(int err, const char* what) {
  TORCH_CHECK(err == 0, "delta rule CUDA kernel ", what, ": ", cudaGetErrorString(static_cast<cudaError_t>(err)));
}

const float* ptr(const Tensor& t) { return t.numel() ? t.data_ptr<float>() : nullptr; }
float* mut(Tensor& t) { return t.numel() ? t.data_ptr<float>() : nullptr; }

// The prepare kernel reads q and k rows as float4: a contiguous view at an odd offset gets a copy of its own.
Tensor aligned16(const Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 ? t.clone() : t;
}

cuda::DeltaShape shape_of(const Tensor& q, const Tensor& v) {  // q (B, H, L, dk), v (B, H, L, dv)
  cuda::DeltaShape s;
  s.rows = q.size(0) * q.size(1);
  s.heads_per_row = q.size(1);
  s.T = q.size(2);
  s.dk = q.size(3);
  s.dv = v.size(3);
  return s;
}

struct ForwardResult {
  Tensor out, final_state, checkpoints;
};

// The chunked forward's kernels. Inputs (B, H, L, ·) contiguous float32; initial (B, H, dk, dv); reset
// uint8 (B, N) or empty. out (B, H, L, dv), the final state, and the state entering every chunk.
ForwardResult forward_kernels(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                              const Tensor& beta, const Tensor& initial, const Tensor& reset) {
  const cuda::DeltaShape s = shape_of(q, v);
  const int64_t N = s.T / cuda::kChunk;
  auto f32 = q.options();
  Tensor u = torch::empty({s.rows, N, cuda::kChunk, s.dv}, f32),
         wt = torch::empty({s.rows, N, s.dk, cuda::kChunk}, f32);
  Tensor aqkt = torch::empty({s.rows, N, cuda::kChunk, cuda::kChunk}, f32);
  Tensor qdt = torch::empty_like(wt), kd = torch::empty({s.rows, N, cuda::kChunk, s.dk}, f32);
  Tensor decay = torch::empty({s.rows, N}, f32);
  cuda::ChunkScratch scratch{mut(u), mut(wt), mut(aqkt), mut(qdt), mut(kd), mut(decay)};
  const Tensor qa = aligned16(q), ka = aligned16(k);
  check(cuda::chunk_prepare(s, ptr(qa), ptr(ka), ptr(v), ptr(g), ptr(beta), scratch, current_stream()),
        "prepare");
  ForwardResult r{torch::empty({q.size(0), q.size(1), s.T, s.dv}, f32),
                  torch::empty({q.size(0), q.size(1), s.dk, s.dv}, f32),
                  torch::empty({s.rows, N, s.dk, s.dv}, f32)};
  const uint8_t* rs = reset.numel() ? reset.data_ptr<uint8_t>() : nullptr;
  check(cuda::chunk_scan(s, scratch, rs, ptr(initial), mut(r.out), mut(r.final_state), mut(r.checkpoints),
                         current_stream()),
        "scan");
  return r;
}

// The differentiable form (forward_kernels' inputs; custom backward over the chunk checkpoints).
struct DeltaRuleFunction : public torch::autograd::Function<DeltaRuleFunction> {
  static variable_list forward(AutogradContext* ctx, Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta,
                               Tensor initial, Tensor reset) {
    ForwardResult r = forward_kernels(q, k, v, g, beta, initial, reset);
    ctx->save_for_backward({q, k, v, g, beta, r.checkpoints, reset});
    return {r.out, r.final_state};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    Tensor &q = saved[0], &k = saved[1], &v = saved[2], &g = saved[3], &beta = saved[4];
    const cuda::DeltaShape s = shape_of(q, v);
    Tensor d_out = grads[0].defined() ? grads[0].contiguous() : torch::zeros({q.size(0), q.size(1), s.T, s.dv}, q.options());
    Tensor d_final = grads[1].defined() ? grads[1].contiguous() : Tensor();
    Tensor dq = torch::zeros_like(q), dk = torch::zeros_like(k), dv = torch::empty_like(v);
    Tensor dg = torch::zeros_like(g), dbeta = torch::zeros_like(beta);
    Tensor d_initial = torch::empty({q.size(0), q.size(1), s.dk, s.dv}, q.options());
    const uint8_t* r = saved[6].numel() ? saved[6].data_ptr<uint8_t>() : nullptr;
    check(cuda::recurrent_backward(s, ptr(q), ptr(k), ptr(v), ptr(g), ptr(beta), r, ptr(saved[5]), ptr(d_out),
                                   d_final.defined() ? ptr(d_final) : nullptr, mut(dq), mut(dk), mut(dv), mut(dg),
                                   mut(dbeta), mut(d_initial), current_stream()),
          "backward");
    return {dq, dk, dv, dg, dbeta, d_initial, Tensor()};
  }
};

}  // namespace

bool cuda_delta_rule_supports(const at::Tensor& q, const at::Tensor& v, int64_t chunk_size) {
  const int64_t dk = q.size(-1), dv = v.size(-1);
  // dk: 16 backward rows per thread group (1, 2, 4 or 8 rows each); dv: whole 32-column scan tiles.
  return q.is_cuda() && chunk_size == cuda::kChunk && (dk == 16 || dk == 32 || dk == 64 || dk == 128) &&
         dv % 32 == 0 && dv <= 128;
}

std::pair<at::Tensor, at::Tensor> cuda_chunk_scan(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                  const at::Tensor& g, const at::Tensor& beta,
                                                  const at::Tensor& state, const at::Tensor& reset) {
  Tensor r = reset.defined() ? reset.to(torch::kUInt8).contiguous() : torch::empty({0}, q.options().dtype(torch::kUInt8));
  auto outs = DeltaRuleFunction::apply(q.contiguous(), k.contiguous(), v.contiguous(), g.contiguous(),
                                       beta.contiguous(), state.contiguous(), r);
  return {outs[0], outs[1]};
}

bool cuda_fused_layout_supports(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                int64_t chunk_size) {
  const auto dtype = q.scalar_type();
  const bool floating = kernel_dtype_supported(dtype);
  const int64_t dk = q.size(-1), dv = v.size(-1);
  return q.is_cuda() && k.device() == q.device() && v.device() == q.device() && floating &&
         k.scalar_type() == dtype && v.scalar_type() == dtype && chunk_size == cuda::kChunk &&
         (dk == 16 || dk == 32 || dk == 64 || dk == 128) && dv % 32 == 0 && dv <= 128;
}

std::pair<at::Tensor, at::Tensor> cuda_chunk_forward(const at::Tensor& q_in, const at::Tensor& k_in,
                                                     const at::Tensor& v_in, const at::Tensor& g,
                                                     const at::Tensor& beta, const at::Tensor& initial) {
  auto last_contiguous = [](const Tensor& x) { return x.stride(-1) == 1 ? x : x.contiguous(); };
  const Tensor q = last_contiguous(q_in), k = last_contiguous(k_in), v = last_contiguous(v_in);
  const Tensor gf = g.to(torch::kFloat), bf = beta.to(torch::kFloat);
  const int64_t B = q.size(0), T = q.size(1), Hv = v.size(2), dk = q.size(3), dv = v.size(3);
  const int64_t L = (T + cuda::kChunk - 1) / cuda::kChunk * cuda::kChunk;
  auto f32 = q.options().dtype(torch::kFloat);
  Tensor qo = torch::empty({B, Hv, L, dk}, f32), ko = torch::empty_like(qo),
         vo = torch::empty({B, Hv, L, dv}, f32);
  Tensor go = torch::empty({B, Hv, L}, f32), bo = torch::empty_like(go);
  auto source = [](const Tensor& x) {
    return cuda::LayoutSource{x.data_ptr(), x.stride(0), x.stride(1), x.stride(2)};
  };
  cuda::LayoutArgs a;
  a.dtype = kernel_dtype_code(q, "delta rule layout");
  a.B = B, a.T = T, a.T_padded = L, a.Hk = q.size(2), a.Hv = Hv, a.dk = dk, a.dv = dv;
  a.q = source(q), a.k = source(k), a.v = source(v), a.g = source(gf), a.beta = source(bf);
  a.q_scale = static_cast<float>(std::pow(static_cast<double>(dk), -0.5));
  a.q_out = mut(qo), a.k_out = mut(ko), a.v_out = mut(vo), a.g_out = mut(go), a.beta_out = mut(bo);
  check(cuda::layout_inputs(a, current_stream()), "layout");
  const Tensor state =
      initial.defined() ? initial.to(torch::kFloat).contiguous() : torch::zeros({B, Hv, dk, dv}, f32);
  ForwardResult r =
      forward_kernels(qo, ko, vo, go, bo, state, torch::empty({0}, q.options().dtype(torch::kUInt8)));
  return {r.out, r.final_state};
}

std::pair<at::Tensor, at::Tensor> cuda_recurrent_step(const at::Tensor& q, const at::Tensor& k,
                                                      const at::Tensor& v, const at::Tensor& g,
                                                      const at::Tensor& beta, at::Tensor state) {
  TORCH_CHECK(q.size(2) == 1, "cuda_recurrent_step: one token per row");
  const cuda::DeltaShape s = shape_of(q, v);
  state = state.contiguous();
  Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous(), gc = g.contiguous(), bc = beta.contiguous();
  Tensor out = torch::empty_like(vc);
  check(cuda::recurrent_step(s, ptr(qc), ptr(kc), ptr(vc), ptr(gc), ptr(bc), mut(state), mut(out), current_stream()),
        "step");
  return {out, state};
}

}  // namespace musacoder::model::detail
