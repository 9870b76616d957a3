#include "model/delta_rule.h"

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <vector>

#ifdef MUSACODER_HAVE_CUDA_KERNELS
#include "model/delta_rule_cuda.h"
#endif

namespace musacoder::model {
namespace {

using at::Tensor;

// Inputs in the algorithm's layout: q, k, v (B, Hv, T, d) float32 (q/k heads repeated to Hv, L2-normed;
// q not yet scaled), g, beta (B, Hv, T).
struct Heads {
  Tensor q, k, v, g, beta;
};

void check_shapes(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta) {
  TORCH_CHECK(q.dim() == 4 && k.sizes() == q.sizes(), "delta rule: q and k must be (B, T, Hk, dk) alike");
  TORCH_CHECK(v.dim() == 4 && v.size(0) == q.size(0) && v.size(1) == q.size(1),
              "delta rule: v must be (B, T, Hv, dv)");
  TORCH_CHECK(v.size(2) % k.size(2) == 0, "delta rule: Hv must be a multiple of Hk");
  TORCH_CHECK(g.dim() == 3 && g.sizes() == beta.sizes() && g.size(0) == v.size(0) && g.size(1) == v.size(1) &&
                  g.size(2) == v.size(2),
              "delta rule: g and beta must be (B, T, Hv)");
}

Heads to_heads(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta) {
  check_shapes(q, k, v, g, beta);
  const int64_t rep = v.size(2) / k.size(2);
  auto layout = [](const Tensor& x) { return x.transpose(1, 2).to(at::kFloat).contiguous(); };
  Tensor qq = rep > 1 ? q.repeat_interleave(rep, 2) : q;
  Tensor kk = rep > 1 ? k.repeat_interleave(rep, 2) : k;
  return {l2_normalize(layout(qq)), l2_normalize(layout(kk)), layout(v), layout(g), layout(beta)};
}

#ifdef MUSACODER_HAVE_CUDA_KERNELS
// Whether autograd would record an op on any of these (undefined tensors allowed).
bool requires_grad(std::initializer_list<Tensor> xs) {
  if (!at::GradMode::is_enabled()) return false;
  return std::any_of(xs.begin(), xs.end(), [](const Tensor& x) { return x.defined() && x.requires_grad(); });
}
#endif

// An initial state, when given, is (B, Hv, dk, dv).
void check_initial(const Tensor& initial, int64_t B, int64_t Hv, int64_t dk, int64_t dv) {
  TORCH_CHECK(!initial.defined() || initial.sizes() == at::IntArrayRef({B, Hv, dk, dv}),
              "delta rule: initial_state must be (B, Hv, dk, dv)");
}

Tensor initial_or_zeros(const Tensor& initial, const Heads& h) {
  check_initial(initial, h.v.size(0), h.v.size(1), h.k.size(3), h.v.size(3));
  if (initial.defined()) return initial.to(at::kFloat);
  return at::zeros({h.v.size(0), h.v.size(1), h.k.size(3), h.v.size(3)}, h.v.options());
}

// The chunked scan over a padded length L = N·C. `reset` (B, N) bool, optional: zero the state before
// chunk n of row b. Returns (B, Hv, L, dv) and the final state. transformers' op order throughout.
DeltaRuleOutput chunk_scan(Heads h, Tensor state, const Tensor& reset, int64_t C) {
  const int64_t B = h.v.size(0), H = h.v.size(1), L = h.v.size(2), N = L / C;
  h.q = h.q * std::pow(static_cast<double>(h.q.size(-1)), -0.5);
#ifdef MUSACODER_HAVE_CUDA_KERNELS
  if (detail::cuda_delta_rule_supports(h.q, h.v, C)) {
    auto [out, final_state] = detail::cuda_chunk_scan(h.q, h.k, h.v, h.g, h.beta, state, reset);
    return {out, final_state};
  }
#endif
  Tensor v_beta = h.v * h.beta.unsqueeze(-1);
  Tensor k_beta = h.k * h.beta.unsqueeze(-1);
  auto chunked = [&](const Tensor& x) { return x.reshape({B, H, N, C, x.size(-1)}); };
  Tensor q = chunked(h.q), k = chunked(h.k);
  k_beta = chunked(k_beta);
  v_beta = chunked(v_beta);
  Tensor cum = h.g.reshape({B, H, N, C}).cumsum(3);
  Tensor upper = at::ones({C, C}, h.q.options().dtype(at::kBool)).triu(1);
  Tensor pair = (cum.unsqueeze(4) - cum.unsqueeze(3))
                    .masked_fill(upper, -std::numeric_limits<double>::infinity())
                    .exp();
  Tensor ut = k_beta.matmul(k.transpose(-1, -2)) * pair;
  Tensor intra = q.matmul(k.transpose(-1, -2)) * pair;
  Tensor decayed_k_beta = k_beta * cum.exp().unsqueeze(-1);
  Tensor new_values = at::linalg_solve_triangular(ut, v_beta, /*upper=*/false, /*left=*/true, /*unitriangular=*/true);
  Tensor k_cumdecay =
      at::linalg_solve_triangular(ut, decayed_k_beta, /*upper=*/false, /*left=*/true, /*unitriangular=*/true);
  q = q * cum.exp().unsqueeze(-1);
  k = k * (cum.narrow(3, C - 1, 1) - cum).exp().unsqueeze(-1);
  Tensor chunk_decay = cum.select(3, C - 1).exp().unsqueeze(-1).unsqueeze(-1);  // (B, H, N, 1, 1)
  Tensor keep;
  if (reset.defined()) keep = reset.logical_not().to(at::kFloat).view({B, 1, N, 1, 1});
  std::vector<Tensor> outs;
  outs.reserve(static_cast<std::size_t>(N));
  for (int64_t i = 0; i < N; ++i) {
    if (keep.defined()) state = state * keep.select(2, i);
    Tensor v_new = new_values.select(2, i) - k_cumdecay.select(2, i).matmul(state);
    Tensor inter = q.select(2, i).matmul(state);
    outs.push_back(inter + intra.select(2, i).matmul(v_new));
    state = state * chunk_decay.select(2, i) + k.select(2, i).transpose(-1, -2).matmul(v_new);
  }
  return {at::stack(outs, 2).reshape({B, H, L, h.v.size(3)}), state};
}

Tensor pad_time(const Tensor& x, int64_t pad) {  // (B, H, T, ...) -> zeros appended along T
  if (pad == 0) return x;
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape[2] = pad;
  return at::cat({x, at::zeros(shape, x.options())}, 2);
}

// Packed layout: every sequence of a row starts at a chunk boundary. dst maps token (b, t) to its row of
// the flattened (B·Lmax) padded layout; reset marks the chunks where a sequence starts.
struct PackedLayout {
  Tensor dst;    // (B·T) int64
  Tensor reset;  // (B, Lmax / C) bool
  int64_t length = 0;  // Lmax
};

PackedLayout packed_layout(const Tensor& sequence_ids, int64_t C) {
  Tensor ids = sequence_ids.to(at::kCPU, at::kLong).contiguous();
  const int64_t B = ids.size(0), T = ids.size(1);
  const int64_t* p = ids.data_ptr<int64_t>();
  std::vector<int64_t> padded_pos(static_cast<std::size_t>(B * T));
  std::vector<std::vector<int64_t>> starts(static_cast<std::size_t>(B));  // chunk index of each start
  int64_t longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    int64_t pos = 0;  // next free padded position in this row
    for (int64_t t = 0; t < T; ++t) {
      if (t == 0 || p[b * T + t] != p[b * T + t - 1]) {
        pos = (pos + C - 1) / C * C;  // the new sequence starts on a chunk boundary
        starts[static_cast<std::size_t>(b)].push_back(pos / C);
      }
      padded_pos[static_cast<std::size_t>(b * T + t)] = pos++;
    }
    longest = std::max(longest, (pos + C - 1) / C * C);
  }
  PackedLayout out;
  out.length = longest;
  std::vector<int64_t> flat(padded_pos.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      flat[static_cast<std::size_t>(b * T + t)] = b * longest + padded_pos[static_cast<std::size_t>(b * T + t)];
  out.dst = at::tensor(flat, at::kLong).to(sequence_ids.device());
  out.reset = at::zeros({B, longest / C}, at::kBool);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n : starts[static_cast<std::size_t>(b)]) out.reset[b][n] = true;
  out.reset = out.reset.to(sequence_ids.device());
  return out;
}

// (B, T, ...) -> (B, Lmax, ...) zero-filled, tokens at their padded positions (differentiable).
Tensor scatter_packed(const Tensor& x, const PackedLayout& l) {
  const int64_t B = x.size(0);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape[0] = B * l.length;
  shape.erase(shape.begin() + 1);
  Tensor padded = at::zeros(shape, x.options()).index_copy(0, l.dst, x.flatten(0, 1));
  shape[0] = l.length;
  shape.insert(shape.begin(), B);
  return padded.view(shape);
}

}  // namespace

bool delta_rule_cuda_kernels_built() {
#ifdef MUSACODER_HAVE_CUDA_KERNELS
  return true;
#else
  return false;
#endif
}

Tensor l2_normalize(const Tensor& x, double eps) {
  return x * at::rsqrt((x * x).sum(-1, /*keepdim=*/true) + eps);
}

DeltaRuleOutput chunk_gated_delta_rule(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                       const Tensor& beta, const Tensor& initial_state,
                                       const Tensor& sequence_ids, int64_t chunk_size) {
  TORCH_CHECK(chunk_size > 0, "delta rule: chunk_size must be positive");
  const int64_t C = chunk_size;
  if (sequence_ids.defined()) {
    TORCH_CHECK(!initial_state.defined(), "delta rule: packed sequences start from a zero state");
    TORCH_CHECK(sequence_ids.dim() == 2 && sequence_ids.size(0) == q.size(0) && sequence_ids.size(1) == q.size(1),
                "delta rule: sequence_ids must be (B, T)");
    PackedLayout l = packed_layout(sequence_ids, C);
    Heads h = to_heads(scatter_packed(q, l), scatter_packed(k, l), scatter_packed(v, l), scatter_packed(g, l),
                       scatter_packed(beta, l));
    DeltaRuleOutput r = chunk_scan(h, initial_or_zeros({}, h), l.reset, C);
    Tensor out = r.out.transpose(1, 2).flatten(0, 1).index_select(0, l.dst);  // (B·T, Hv, dv)
    return {out.view({q.size(0), q.size(1), v.size(2), v.size(3)}).to(q.scalar_type()), Tensor()};
  }
#ifdef MUSACODER_HAVE_CUDA_KERNELS
  check_shapes(q, k, v, g, beta);
  if (!requires_grad({q, k, v, g, beta, initial_state}) && detail::cuda_fused_layout_supports(q, k, v, C)) {
    const int64_t B = q.size(0), T = q.size(1), Hv = v.size(2);
    check_initial(initial_state, B, Hv, q.size(3), v.size(3));
    auto [out, final_state] = detail::cuda_chunk_forward(q, k, v, g, beta, initial_state);
    // (B, Hv, L, dv) float32 -> (B, T, Hv, dv) in q's dtype: one copy does the cut, transpose and cast
    Tensor result = at::empty({B, T, Hv, v.size(3)}, v.options().dtype(q.scalar_type()));
    result.copy_(out.narrow(2, 0, T).transpose(1, 2));
    return {result, final_state};
  }
#endif
  Heads h = to_heads(q, k, v, g, beta);
  Tensor state = initial_or_zeros(initial_state, h);
  const int64_t T = h.v.size(2), pad = (C - T % C) % C;
  h.q = pad_time(h.q, pad);
  h.k = pad_time(h.k, pad);
  h.v = pad_time(h.v, pad);
  h.g = pad_time(h.g, pad);
  h.beta = pad_time(h.beta, pad);
  DeltaRuleOutput r = chunk_scan(h, state, Tensor(), C);
  r.out = r.out.narrow(2, 0, T).transpose(1, 2).contiguous().to(q.scalar_type());
  return r;
}

DeltaRuleOutput recurrent_gated_delta_rule(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                           const Tensor& beta, const Tensor& initial_state) {
  Heads h = to_heads(q, k, v, g, beta);
  Tensor state = initial_or_zeros(initial_state, h);
  h.q = h.q / std::sqrt(static_cast<double>(h.q.size(-1)));
#ifdef MUSACODER_HAVE_CUDA_KERNELS
  if (h.v.size(2) == 1 && !requires_grad({q, k, v, g, beta, initial_state}) &&
      detail::cuda_delta_rule_supports(h.q, h.v, 64)) {
    auto [out, final_state] = detail::cuda_recurrent_step(h.q, h.k, h.v, h.g, h.beta, state.clone());
    return {out.transpose(1, 2).contiguous().to(q.scalar_type()), final_state};
  }
#endif
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < h.v.size(2); ++t) {
    Tensor q_t = h.q.select(2, t), k_t = h.k.select(2, t), v_t = h.v.select(2, t);
    state = state * h.g.select(2, t).exp().unsqueeze(-1).unsqueeze(-1);
    Tensor kv_mem = (state * k_t.unsqueeze(-1)).sum(-2);
    Tensor delta = (v_t - kv_mem) * h.beta.select(2, t).unsqueeze(-1);
    state = state + k_t.unsqueeze(-1) * delta.unsqueeze(-2);
    outs.push_back((state * q_t.unsqueeze(-1)).sum(-2));
  }
  Tensor out = at::stack(outs, 2).transpose(1, 2).contiguous().to(q.scalar_type());
  return {out, state};
}

}  // namespace musacoder::model
