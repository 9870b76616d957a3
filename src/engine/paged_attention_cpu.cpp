// Paged decode attention on the CPU for float32 (paged_attention.h): one (sequence, kv head) per task — its
// GQA group of query heads shares every key and value row read — the context read from the pages through the
// block table (no gathered copy of the KV), a two-pass softmax in float. At the quickstart's sizes the
// gathered SDPA path copied ~100 MB per step and spent most of the step in memcpy and page faults; this reads
// each cached key and value once.
#include <ATen/Parallel.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/paged_attention.h"

namespace musacoder::engine {
namespace {

struct DecodeView {
  const float *q, *k, *v;
  const int32_t *tables, *lens;
  float* out;
  int64_t heads, kv_heads, dim, block_size, max_blocks;
  float scale;
};

// q . k in float with eight partial sums (a reduction the compiler may vectorize without -ffast-math).
[[gnu::always_inline]] inline float dot(const float* q, const float* k, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t d = 0;
  for (; d + 8 <= n; d += 8)
    for (int j = 0; j < 8; ++j) acc[j] += q[d + j] * k[d + j];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; d < n; ++d) s += q[d] * k[d];
  return s;
}

// o += p * v (restrict: no aliasing, so the loop vectorizes).
[[gnu::always_inline]] inline void axpy(float* __restrict o, const float* __restrict v, float p, int64_t n) {
  for (int64_t d = 0; d < n; ++d) o[d] += p * v[d];
}

// Calls f(row pointer, t) for the rows t = 0..len-1 of kv head g of sequence b in `pages`, block by block
// (one table lookup per block, no division per row).
template <typename F>
[[gnu::always_inline]] inline void for_each_row(const DecodeView& a, const float* pages, int64_t b, int64_t g,
                                                int64_t len, F&& f) {
  const int64_t stride = a.kv_heads * a.dim;
  for (int64_t blk = 0, t = 0; t < len; ++blk) {
    const int64_t first = static_cast<int64_t>(a.tables[b * a.max_blocks + blk]) * a.block_size;
    const float* p = pages + first * stride + g * a.dim;
    for (int64_t r = 0; r < a.block_size && t < len; ++r, ++t, p += stride) f(p, t);
  }
}

// x86-64: a copy for AVX2+FMA chosen at load time (glibc ifunc) besides the baseline build; the helpers above
// and the row loops' bodies are forced inline, so each copy compiles them for its instruction set.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MC_DECODE_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define MC_INLINE __attribute__((always_inline))
#else
#define MC_DECODE_CLONES
#define MC_INLINE
#endif

// Attention of the query heads of kv head g (GQA: heads / kv_heads of them) of sequence b over its context:
// each cached key and value row is read once for the whole group. `w` is scratch for the weights (group x
// len).
MC_DECODE_CLONES void attend_group(const DecodeView& a, int64_t b, int64_t g, std::vector<float>& w) {
  const int64_t len = a.lens[b], group = a.heads / a.kv_heads, D = a.dim;
  const float* q = a.q + (b * a.heads + g * group) * D;
  float* o = a.out + (b * a.heads + g * group) * D;
  for (int64_t d = 0; d < group * D; ++d) o[d] = 0.0f;
  if (len <= 0) return;
  w.resize(static_cast<std::size_t>(group * len));
  for_each_row(a, a.k, b, g, len, [&](const float* k, int64_t t) MC_INLINE {
    for (int64_t h = 0; h < group; ++h) w[h * len + t] = dot(q + h * D, k, D) * a.scale;
  });
  for (int64_t h = 0; h < group; ++h) {
    float* wh = w.data() + h * len;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t t = 0; t < len; ++t) m = std::max(m, wh[t]);
    float sum = 0.0f;
    for (int64_t t = 0; t < len; ++t) sum += (wh[t] = std::exp(wh[t] - m));
    const float inv = 1.0f / sum;
    for (int64_t t = 0; t < len; ++t) wh[t] *= inv;
  }
  for_each_row(a, a.v, b, g, len, [&](const float* v, int64_t t) MC_INLINE {
    for (int64_t h = 0; h < group; ++h) axpy(o + h * D, v, w[h * len + t], D);
  });
}

}  // namespace

bool cpu_decode_kernel_applies(const torch::Tensor& q, const torch::Tensor& k_pages) {
  return q.device().is_cpu() && q.scalar_type() == torch::kFloat32 &&
         k_pages.scalar_type() == torch::kFloat32;
}

torch::Tensor paged_decode_cpu(const torch::Tensor& q, const torch::Tensor& k_pages,
                               const torch::Tensor& v_pages, const torch::Tensor& block_tables,
                               const torch::Tensor& context_lens, double scale) {
  TORCH_CHECK(cpu_decode_kernel_applies(q, k_pages) && v_pages.scalar_type() == torch::kFloat32,
              "paged_decode_cpu: float32 CPU tensors only");
  TORCH_CHECK(q.dim() == 3 && k_pages.dim() == 4 && q.size(1) % k_pages.size(2) == 0,
              "paged_decode_cpu: bad shapes");
  auto qc = q.contiguous(), kc = k_pages.contiguous(), vc = v_pages.contiguous();
  auto tables = block_tables.to(torch::kInt).contiguous(), lens = context_lens.to(torch::kInt).contiguous();
  auto out = torch::empty_like(qc);
  const DecodeView a{qc.data_ptr<float>(),
                     kc.data_ptr<float>(),
                     vc.data_ptr<float>(),
                     tables.data_ptr<int32_t>(),
                     lens.data_ptr<int32_t>(),
                     out.data_ptr<float>(),
                     q.size(1),
                     k_pages.size(2),
                     q.size(2),
                     k_pages.size(1),
                     tables.size(1),
                     static_cast<float>(scale)};
  const int64_t kv_heads = a.kv_heads;
  at::parallel_for(0, q.size(0) * kv_heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> w;
    for (int64_t i = begin; i < end; ++i) attend_group(a, i / kv_heads, i % kv_heads, w);
  });
  return out;
}

}  // namespace musacoder::engine
