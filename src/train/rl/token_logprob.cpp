#include "train/rl/token_logprob.h"

namespace musacoder::train::rl {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// log softmax(h Wᵀ)[target] of rows [b, e), float32; their entropies into `entropy` when defined.
torch::Tensor chunk_logprobs(const torch::Tensor& h, const torch::Tensor& w, const torch::Tensor& t,
                             torch::Tensor entropy = {}) {
  torch::Tensor logp = torch::log_softmax(torch::matmul(h, w.t()).to(torch::kFloat), 1);
  if (entropy.defined()) entropy.copy_(-(logp.exp() * logp).sum(1));
  return logp.gather(1, t.unsqueeze(1)).squeeze(1);
}

class WeightedLogprob : public torch::autograd::Function<WeightedLogprob> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& targets, const torch::Tensor& weights, int64_t chunk_rows) {
    ctx->save_for_backward({hidden, weight, targets, weights});
    ctx->saved_data["chunk"] = chunk_rows;
    torch::NoGradGuard no_grad;
    return (token_logprobs(hidden, weight, targets, chunk_rows) * weights.to(torch::kFloat)).sum();
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &h = saved[0], &w = saved[1], &t = saved[2];
    const torch::Tensor wt = saved[3].to(torch::kFloat) * grad_out[0].to(torch::kFloat);
    const int64_t chunk = ctx->saved_data["chunk"].toInt(), n = h.size(0);
    torch::Tensor dh = torch::zeros_like(h, h.options().dtype(torch::kFloat));
    torch::Tensor dw = torch::zeros(w.sizes(), w.options().dtype(torch::kFloat));
    for (int64_t b = 0; b < n; b += chunk) {
      const int64_t e = std::min(n, b + chunk);
      torch::Tensor hc = h.slice(0, b, e);
      torch::Tensor logits = torch::matmul(hc, w.t()).to(torch::kFloat);
      torch::Tensor g = -torch::softmax(logits, 1);  // ∂logp/∂logits = onehot − softmax
      g.scatter_add_(1, t.slice(0, b, e).unsqueeze(1), torch::ones({e - b, 1}, g.options()));
      g.mul_(wt.slice(0, b, e).unsqueeze(1));
      dh.slice(0, b, e).copy_(torch::matmul(g, w.to(torch::kFloat)));
      if (w.requires_grad()) dw.add_(torch::matmul(g.t(), hc.to(torch::kFloat)));
    }
    return {dh.to(h.scalar_type()), w.requires_grad() ? dw.to(w.scalar_type()) : torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor token_logprobs(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& targets,
                             int64_t chunk_rows, torch::Tensor* entropy) {
  torch::NoGradGuard no_grad;
  const int64_t n = hidden.size(0), chunk = std::max<int64_t>(1, chunk_rows);
  torch::Tensor out = torch::empty({n}, hidden.options().dtype(torch::kFloat));
  if (entropy) *entropy = torch::empty({n}, hidden.options().dtype(torch::kFloat));
  for (int64_t b = 0; b < n; b += chunk) {
    const int64_t e = std::min(n, b + chunk);
    out.slice(0, b, e).copy_(chunk_logprobs(hidden.slice(0, b, e), weight, targets.slice(0, b, e),
                                            entropy ? entropy->slice(0, b, e) : torch::Tensor()));
  }
  return out;
}

torch::Tensor weighted_logprob_sum(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, const torch::Tensor& weights, int64_t chunk_rows) {
  return WeightedLogprob::apply(hidden, weight, targets, weights, std::max<int64_t>(1, chunk_rows));
}

}  // namespace musacoder::train::rl
