#include "model/delta_rule_cuda.h"

#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/torch.h>

#include "model/cuda/delta_rule_kernels.h"

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

cuda::DeltaShape shape_of(const Tensor& q, const Tensor& v) {  // q (B, H, L, dk), v (B, H, L, dv)
  cuda::DeltaShape s;
  s.rows = q.size(0) * q.size(1);
  s.heads_per_row = q.size(1);
  s.T = q.size(2);
  s.dk = q.size(3);
  s.dv = v.size(3);
  return s;
}

// Inputs (B, H, L, ·) contiguous float32; initial (B, H, dk, dv) (zeros when none); reset uint8 (B, N) or
// empty. Outputs: out (B, H, L, dv), final state.
struct DeltaRuleFunction : public torch::autograd::Function<DeltaRuleFunction> {
  static variable_list forward(AutogradContext* ctx, Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta,
                               Tensor initial, Tensor reset) {
    const cuda::DeltaShape s = shape_of(q, v);
    const int64_t N = s.T / cuda::kChunk;
    auto f32 = q.options();
    Tensor u = torch::empty({s.rows, N, cuda::kChunk, s.dv}, f32), wt = torch::empty({s.rows, N, s.dk, cuda::kChunk}, f32);
    Tensor aqkt = torch::empty({s.rows, N, cuda::kChunk, cuda::kChunk}, f32);
    Tensor qdt = torch::empty_like(wt), kd = torch::empty({s.rows, N, cuda::kChunk, s.dk}, f32);
    Tensor decay = torch::empty({s.rows, N}, f32);
    cuda::ChunkScratch scratch{mut(u), mut(wt), mut(aqkt), mut(qdt), mut(kd), mut(decay)};
    check(cuda::chunk_prepare(s, ptr(q), ptr(k), ptr(v), ptr(g), ptr(beta), scratch, current_stream()), "prepare");
    Tensor out = torch::empty({q.size(0), q.size(1), s.T, s.dv}, f32);
    Tensor final_state = torch::empty({q.size(0), q.size(1), s.dk, s.dv}, f32);
    Tensor checkpoints = torch::empty({s.rows, N, s.dk, s.dv}, f32);
    const uint8_t* r = reset.numel() ? reset.data_ptr<uint8_t>() : nullptr;
    check(cuda::chunk_scan(s, scratch, r, ptr(initial), mut(out), mut(final_state), mut(checkpoints), current_stream()),
          "scan");
    ctx->save_for_backward({q, k, v, g, beta, checkpoints, reset});
    return {out, final_state};
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
