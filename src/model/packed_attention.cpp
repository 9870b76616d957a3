// Packed sequences: their positions, their dense block-diagonal causal mask, the cumulative-length layout
// (packed_cu_seqlens), and varlen flash attention on CUDA (PyTorch's flash kernels take the run lengths
// directly: no (T, T) mask, no score matrix, no blocks computed across sequences, and grouped kv heads
// without repeating them).
#include <ATen/ops/_flash_attention_backward.h>
#include <ATen/ops/_flash_attention_forward.h>

#include "model/decoder.h"

namespace musacoder::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// q (N, H, D), k/v (N, Hkv, D) over the flattened tokens; causal within each run of cu (int32 (n + 1)).
class FlashVarlen : public torch::autograd::Function<FlashVarlen> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& cu, int64_t max_len,
                               double scale) {
    auto [out, lse, rng, unused, debug] =
        at::_flash_attention_forward(q, k, v, cu, cu, max_len, max_len, /*dropout_p=*/0.0, /*is_causal=*/true,
                                     /*return_debug_mask=*/false, scale);
    (void)debug;
    ctx->save_for_backward({q, k, v, out, lse, cu, rng, unused});
    ctx->saved_data["max_len"] = max_len;
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto s = ctx->get_saved_variables();
    const int64_t max_len = ctx->saved_data["max_len"].toInt();
    auto [dq, dk, dv] = at::_flash_attention_backward(
        grad[0].contiguous(), s[0], s[1], s[2], s[3], s[4], s[5], s[5], max_len, max_len, /*dropout_p=*/0.0,
        /*is_causal=*/true, s[6], s[7], ctx->saved_data["scale"].toDouble());
    return {dq, dk, dv, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// The dtypes PyTorch's flash kernels take.
bool half_precision(torch::ScalarType t) {
  return t == torch::kHalf || t == torch::kBFloat16;
}

bool flash_varlen_usable(const torch::Tensor& q, const torch::Tensor& k) {
  const int64_t d = q.size(3);
  return q.is_cuda() && half_precision(q.scalar_type()) && d % 8 == 0 && d <= 256 && k.size(2) == q.size(2) &&
         q.size(1) % k.size(1) == 0;
}

// (B, T) bool: true where a run of equal ids begins (every row's first token too).
torch::Tensor run_starts(const torch::Tensor& sequence_ids) {
  TORCH_CHECK(sequence_ids.dim() == 2, "sequence_ids must be (B, T)");
  const int64_t B = sequence_ids.size(0), T = sequence_ids.size(1);
  torch::Tensor start = torch::ones({B, T}, sequence_ids.options().dtype(torch::kBool));
  if (T > 1)
    start.narrow(1, 1, T - 1).copy_(sequence_ids.narrow(1, 1, T - 1) != sequence_ids.narrow(1, 0, T - 1));
  return start;
}

// (B, H, T, D) -> (B·T, H, D) contiguous.
torch::Tensor flat(const torch::Tensor& x) {
  return x.transpose(1, 2).reshape({-1, x.size(1), x.size(3)});
}

}  // namespace

torch::Tensor packed_causal_mask(const torch::Tensor& sequence_ids) {
  const int64_t T = sequence_ids.size(1);
  torch::Tensor same = sequence_ids.unsqueeze(2) == sequence_ids.unsqueeze(1);  // (B, T, T)
  torch::Tensor causal = torch::ones({T, T}, sequence_ids.options().dtype(torch::kBool)).tril();
  return (same & causal).unsqueeze(1);
}

torch::Tensor packed_position_ids(const torch::Tensor& sequence_ids) {
  const torch::Tensor start = run_starts(sequence_ids);
  const int64_t B = sequence_ids.size(0), T = sequence_ids.size(1);
  torch::Tensor idx =
      torch::arange(T, sequence_ids.options().dtype(torch::kLong)).unsqueeze(0).expand({B, T});
  // The index where each token's sequence began: running max of start positions.
  torch::Tensor begin = std::get<0>(torch::cummax(torch::where(start, idx, torch::zeros_like(idx)), 1));
  return idx - begin;
}

torch::Tensor packed_cu_seqlens(const torch::Tensor& sequence_ids) {
  const torch::Tensor starts = run_starts(sequence_ids).reshape({-1}).nonzero().squeeze(1);  // the one sync
  return torch::cat({starts, torch::full({1}, sequence_ids.numel(), starts.options())}).to(torch::kInt);
}

torch::Tensor packed_attention_mask(const torch::Tensor& sequence_ids, torch::ScalarType dtype) {
  const bool flash = sequence_ids.is_cuda() && half_precision(dtype);
  return flash ? packed_cu_seqlens(sequence_ids) : packed_causal_mask(sequence_ids);
}

bool packed_flash_usable(const torch::Tensor& q, const torch::Tensor& k) {
  return flash_varlen_usable(q, k);
}

torch::Tensor packed_sdpa(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                          const torch::Tensor& cu_seqlens, double scale, int64_t max_run) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
  TORCH_CHECK(cu_seqlens.dim() == 1 && cu_seqlens.scalar_type() == torch::kInt,
              "cu_seqlens must be int32 (n + 1)");
  TORCH_CHECK(k.size(2) == T, "packed sequences attend within the same tokens (no cache)");
  if (!flash_varlen_usable(q, k)) {
    // The run index of every flattened token, back to (B, T) ids: the dense block-diagonal causal mask.
    auto tokens = torch::arange(B * T, cu_seqlens.options().dtype(torch::kLong));
    auto runs = torch::searchsorted(cu_seqlens.narrow(0, 1, cu_seqlens.size(0) - 1).to(torch::kLong), tokens,
                                    /*out_int32=*/false, /*right=*/true);
    return grouped_sdpa(q, k, v, packed_causal_mask(runs.view({B, T})), /*causal=*/false, scale);
  }
  // T (or max_run) bounds every run's length: the kernels size their grid by it and skip the blocks past a
  // run's end.
  torch::Tensor out = FlashVarlen::apply(flat(q), flat(k), flat(v), cu_seqlens.to(q.device()),
                                         max_run > 0 ? max_run : T, scale);
  return out.view({B, T, H, D}).transpose(1, 2);
}

}  // namespace musacoder::model
