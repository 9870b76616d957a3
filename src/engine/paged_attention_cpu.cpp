// Paged decode attention on the CPU for float32 (paged_attention.h): one (sequence, head) per task, the
// context read from the pages through the block table (no gathered copy of the KV), a two-pass softmax in
// float. At the quickstart's sizes the gathered SDPA path copied ~100 MB per step and spent most of the
// step in memcpy and page faults; this reads each cached key and value once.
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
float dot(const float* q, const float* k, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t d = 0;
  for (; d + 8 <= n; d += 8)
    for (int j = 0; j < 8; ++j) acc[j] += q[d + j] * k[d + j];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; d < n; ++d) s += q[d] * k[d];
  return s;
}

// o += p * v (restrict: no aliasing, so the loop vectorizes).
void axpy(float* __restrict o, const float* __restrict v, float p, int64_t n) {
  for (int64_t d = 0; d < n; ++d) o[d] += p * v[d];
}

// Attention of query (b, h) over its context; `w` is scratch for the weights.
void attend_one(const DecodeView& a, int64_t b, int64_t h, std::vector<float>& w) {
  const int64_t len = a.lens[b], g = h / (a.heads / a.kv_heads), D = a.dim;
  const float* q = a.q + (b * a.heads + h) * D;
  float* o = a.out + (b * a.heads + h) * D;
  for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
  if (len <= 0) return;
  w.resize(static_cast<std::size_t>(len));
  const auto row = [&](const float* pages, int64_t t) {
    const int64_t slot =
        static_cast<int64_t>(a.tables[b * a.max_blocks + t / a.block_size]) * a.block_size + t % a.block_size;
    return pages + (slot * a.kv_heads + g) * D;
  };
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t t = 0; t < len; ++t) {
    w[t] = dot(q, row(a.k, t), D) * a.scale;
    m = std::max(m, w[t]);
  }
  float sum = 0.0f;
  for (int64_t t = 0; t < len; ++t) sum += (w[t] = std::exp(w[t] - m));
  for (int64_t t = 0; t < len; ++t) {
    axpy(o, row(a.v, t), w[t] / sum, D);
  }
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
  const int64_t heads = a.heads;
  at::parallel_for(0, q.size(0) * heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> w;
    for (int64_t i = begin; i < end; ++i) attend_one(a, i / heads, i % heads, w);
  });
  return out;
}

}  // namespace musacoder::engine
