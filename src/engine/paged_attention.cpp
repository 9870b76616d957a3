#include "engine/paged_attention.h"

#include "engine/paged_attention_cuda.h"
#include "model/decoder.h"  // grouped_sdpa

namespace musacoder::engine {
namespace {

// (B, L) flat slot of each context position; positions past a sequence's length point at slot 0 (masked).
torch::Tensor context_slots_of(const torch::Tensor& block_tables, const torch::Tensor& context_lens,
                               int64_t max_context, int64_t block_size) {
  auto pos = torch::arange(max_context, context_lens.options().dtype(torch::kLong));
  auto tables = block_tables.to(torch::kLong);
  auto block = tables.index_select(1, pos.div(block_size, "floor"));  // (B, L)
  auto slots = block * block_size + pos.remainder(block_size);
  auto valid = pos.unsqueeze(0) < context_lens.to(torch::kLong).unsqueeze(1);
  return torch::where(valid, slots, torch::zeros_like(slots));
}

}  // namespace

void write_kv(torch::Tensor& k_pages, torch::Tensor& v_pages, const torch::Tensor& slots, const torch::Tensor& k,
              const torch::Tensor& v) {
  const int64_t h = k_pages.size(2), d = k_pages.size(3);
  k_pages.view({-1, h, d}).index_copy_(0, slots, k.to(k_pages.scalar_type()));
  v_pages.view({-1, h, d}).index_copy_(0, slots, v.to(v_pages.scalar_type()));
}

torch::Tensor paged_decode_reference(const torch::Tensor& q, const torch::Tensor& k_pages,
                                     const torch::Tensor& v_pages, const torch::Tensor& block_tables,
                                     const torch::Tensor& context_lens, int64_t max_context, double scale) {
  const int64_t B = q.size(0), h = k_pages.size(2), d = k_pages.size(3);
  auto slots = context_slots_of(block_tables, context_lens, max_context, k_pages.size(1)).view({-1});
  auto k = k_pages.view({-1, h, d}).index_select(0, slots).view({B, max_context, h, d}).transpose(1, 2);
  auto v = v_pages.view({-1, h, d}).index_select(0, slots).view({B, max_context, h, d}).transpose(1, 2);
  auto pos = torch::arange(max_context, context_lens.options().dtype(torch::kLong));
  auto mask = (pos.unsqueeze(0) < context_lens.to(torch::kLong).unsqueeze(1)).view({B, 1, 1, max_context});
  auto out = model::grouped_sdpa(q.unsqueeze(2), k, v, mask, false, scale);  // (B, H, 1, D)
  return out.squeeze(2);
}

bool cuda_decode_kernel_available(int64_t head_dim) {
#ifdef MUSACODER_ENGINE_CUDA
  return paged_decode_supports_head_dim(static_cast<int>(head_dim));
#else
  (void)head_dim;
  return false;
#endif
}

torch::Tensor paged_decode(const torch::Tensor& q, const torch::Tensor& k_pages, const torch::Tensor& v_pages,
                           const torch::Tensor& block_tables, const torch::Tensor& context_lens, int64_t max_context,
                           double scale, bool allow_kernel) {
#ifdef MUSACODER_ENGINE_CUDA
  if (allow_kernel && q.is_cuda() && cuda_decode_kernel_available(q.size(2)))
    return paged_decode_cuda(q, k_pages, v_pages, block_tables, context_lens, scale);
#endif
  if (allow_kernel && cpu_decode_kernel_applies(q, k_pages))
    return paged_decode_cpu(q, k_pages, v_pages, block_tables, context_lens, scale);
  return paged_decode_reference(q, k_pages, v_pages, block_tables, context_lens, max_context, scale);
}

torch::Tensor prefill_attention(const torch::Tensor& q, const torch::Tensor& k_new, const torch::Tensor& v_new,
                                const torch::Tensor& k_pages, const torch::Tensor& v_pages,
                                const torch::Tensor& context_slots, int64_t cached, double scale) {
  const int64_t T = q.size(0), h = k_pages.size(2), d = k_pages.size(3);
  auto qh = q.transpose(0, 1).unsqueeze(0);  // (1, H, T, D)
  if (cached == 0) {
    auto out = model::grouped_sdpa(qh, k_new.transpose(0, 1).unsqueeze(0), v_new.transpose(0, 1).unsqueeze(0),
                                   torch::Tensor(), T > 1, scale);
    return out.squeeze(0).transpose(0, 1);
  }
  const int64_t S = cached + T;
  auto k = k_pages.view({-1, h, d}).index_select(0, context_slots).to(q.scalar_type());
  auto v = v_pages.view({-1, h, d}).index_select(0, context_slots).to(q.scalar_type());
  // New token i (position cached + i) sees positions <= cached + i: (1, 1, T, S).
  auto q_pos = torch::arange(cached, S, context_slots.options()).unsqueeze(1);
  auto k_pos = torch::arange(S, context_slots.options()).unsqueeze(0);
  auto mask = (k_pos <= q_pos).view({1, 1, T, S});
  auto out = model::grouped_sdpa(qh, k.transpose(0, 1).unsqueeze(0), v.transpose(0, 1).unsqueeze(0), mask,
                                 false, scale);
  return out.squeeze(0).transpose(0, 1);
}

}  // namespace musacoder::engine
