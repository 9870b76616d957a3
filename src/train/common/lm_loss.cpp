#include "train/common/lm_loss.h"

#include <algorithm>
#include <utility>

#ifdef MUSACODER_HAVE_TRAIN_CUDA_KERNELS
#include "train/common/lm_loss_cuda.h"
#endif

namespace musacoder::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// log Σ exp and the target's logit per row of one chunk of logits (as the LM-head matmul wrote them, (len,
// V)): on CUDA one kernel pass; else through a float32 copy.
std::pair<torch::Tensor, torch::Tensor> row_lse(const torch::Tensor& raw, const torch::Tensor& targets) {
#ifdef MUSACODER_HAVE_TRAIN_CUDA_KERNELS
  if (detail::cuda_lm_kernels_take(raw, targets)) return detail::cuda_lm_rows(raw, targets);
#endif
  torch::Tensor logits = raw.to(torch::kFloat);
  return {logits.logsumexp(-1), logits.gather(1, targets.unsqueeze(1)).squeeze(1)};
}

// (softmax(raw) − onehot(targets)) · g for one chunk of logits (as the LM-head matmul wrote them), from the
// forward's lse: on CUDA one kernel pass in the logits' dtype; else in float32, op by op.
torch::Tensor softmax_grad(const torch::Tensor& raw, const torch::Tensor& targets, const torch::Tensor& lse,
                           const torch::Tensor& g) {
#ifdef MUSACODER_HAVE_TRAIN_CUDA_KERNELS
  if (detail::cuda_lm_kernels_take(raw, targets)) return detail::cuda_lm_grad(raw, targets, lse, g);
#endif
  torch::Tensor p = (raw.to(torch::kFloat) - lse.unsqueeze(1)).exp_();
  p.scatter_add_(1, targets.unsqueeze(1), torch::full({raw.size(0), 1}, -1.0f, p.options()));
  return p.mul_(g);
}

// grad_w (V, C) float32 += pgᵀ h over one chunk: on CUDA in 16-bit one GEMM accumulating into float32; else a
// float32 addmm, or a 16-bit product (float32 accumulation inside) added in float32.
void accumulate_weight_grad(torch::Tensor& grad_w, const torch::Tensor& pg, const torch::Tensor& h) {
#ifdef MUSACODER_HAVE_TRAIN_CUDA_KERNELS
  if (detail::cuda_accumulate_takes(grad_w, pg, h)) return detail::cuda_accumulate_at_b(grad_w, pg, h);
#endif
  if (pg.scalar_type() == torch::kFloat)
    grad_w.addmm_(pg.t(), h);
  else
    grad_w.add_(pg.t().matmul(h));
}

class ChunkedLmCrossEntropy : public torch::autograd::Function<ChunkedLmCrossEntropy> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& targets, int64_t chunk_rows) {
    const int64_t n = hidden.size(0);
    torch::Tensor lse = torch::empty({n}, hidden.options().dtype(torch::kFloat));
    torch::Tensor total = torch::zeros({}, hidden.options().dtype(torch::kFloat));
    for (int64_t s = 0; s < n; s += chunk_rows) {
      const int64_t len = std::min(chunk_rows, n - s);
      auto [l, target_logit] =
          row_lse(hidden.narrow(0, s, len).matmul(weight.t()), targets.narrow(0, s, len));
      lse.narrow(0, s, len).copy_(l);
      total += (l - target_logit).sum();
    }
    ctx->save_for_backward({hidden, weight, targets, lse});
    ctx->saved_data["chunk_rows"] = chunk_rows;
    return total;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor &hidden = saved[0], &weight = saved[1], &targets = saved[2], &lse = saved[3];
    const int64_t chunk_rows = ctx->saved_data["chunk_rows"].toInt();
    const int64_t n = hidden.size(0);
    const bool need_w = ctx->needs_input_grad(1);
    torch::Tensor grad_h = torch::empty_like(hidden);
    torch::Tensor grad_w = need_w ? torch::zeros(weight.sizes(), weight.options().dtype(torch::kFloat)) : torch::Tensor();
    const torch::Tensor& g = grad_output[0];
    for (int64_t s = 0; s < n; s += chunk_rows) {
      const int64_t len = std::min(chunk_rows, n - s);
      torch::Tensor h = hidden.narrow(0, s, len);
      torch::Tensor pg =
          softmax_grad(h.matmul(weight.t()), targets.narrow(0, s, len), lse.narrow(0, s, len), g)
              .to(hidden.scalar_type());
      grad_h.narrow(0, s, len).copy_(pg.matmul(weight));
      if (need_w) accumulate_weight_grad(grad_w, pg, h);
    }
    return {grad_h, need_w ? grad_w.to(weight.scalar_type()) : torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

int64_t lm_loss_chunk_rows(int64_t vocab, int64_t budget_bytes) {
  return std::max<int64_t>(1, budget_bytes / (4 * std::max<int64_t>(1, vocab)));
}

torch::Tensor chunked_lm_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                       const torch::Tensor& targets, int64_t chunk_rows) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1),
              "chunked_lm_cross_entropy: hidden (N, C) and weight (V, C) required");
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == hidden.size(0) && targets.scalar_type() == torch::kLong,
              "chunked_lm_cross_entropy: targets must be (N) int64");
  TORCH_CHECK(chunk_rows >= 1, "chunked_lm_cross_entropy: chunk_rows must be positive");
  return ChunkedLmCrossEntropy::apply(hidden, weight, targets, chunk_rows);
}

}  // namespace musacoder::train
