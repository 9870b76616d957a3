// The CUDA paged decode kernels (src/engine/paged_attention_cuda.cu), run as written on the CPU through
// tests/support/cuda_emulation.h, against attention computed in double over the same pages: every element
// type, GQA groups of 1 to 20 query heads (two runs of heads per kv head above 16), head_dim 32 to 256
// (16-byte chunks that do and do not divide the block's threads), tile and partition edges, and the three
// partition sizes. The GPU test (tests/gpu/engine) runs the same kernels on the device.
#include <gtest/gtest.h>

#include <random>

#include "support/cuda_emulation.h"
#define MUSACODER_CUDA_EMULATION
#include "engine/paged_attention_cuda.cu"

namespace musacoder::engine {
namespace {

struct Case {
  int heads, kv_heads, block_size;
  std::vector<int32_t> contexts;
  int partition;
};

// Pages, tables and q filled at random; the reference output in double.
template <typename T>
struct Problem {
  int B, H, Hkv, D, bs, max_blocks;
  std::vector<T> k, v, q;
  std::vector<int32_t> tables, contexts;

  Problem(const Case& c, int head_dim, std::mt19937& rng)
      : B(static_cast<int>(c.contexts.size())),
        H(c.heads),
        Hkv(c.kv_heads),
        D(head_dim),
        bs(c.block_size),
        contexts(c.contexts) {
    const int longest = *std::max_element(contexts.begin(), contexts.end());
    max_blocks = (longest + bs - 1) / bs + 2;  // wider than needed, as an engine's tables are
    const int num_blocks = B * max_blocks + 1;
    std::normal_distribution<float> normal;
    auto fill = [&](std::vector<T>& x, size_t n) {
      x.resize(n);
      for (auto& e : x) e = from_float<T>(normal(rng));
    };
    fill(k, size_t(num_blocks) * bs * Hkv * D);
    fill(v, k.size());
    fill(q, size_t(B) * H * D);
    std::vector<int32_t> perm(num_blocks - 1);
    for (int i = 0; i < num_blocks - 1; ++i)
      perm[i] = i + 1;  // block 0 stays unused (the engine's null block)
    std::shuffle(perm.begin(), perm.end(), rng);
    tables.assign(perm.begin(), perm.begin() + B * max_blocks);
  }

  double at(const std::vector<T>& pages, int s, int t, int kvh, int d) const {
    const int64_t slot = int64_t(tables[s * max_blocks + t / bs]) * bs + t % bs;
    return to_float(pages[(slot * Hkv + kvh) * D + d]);
  }

  std::vector<double> reference(double scale) const {
    std::vector<double> out(size_t(B) * H * D);
    for (int s = 0; s < B; ++s) {
      for (int h = 0; h < H; ++h) {
        const int kvh = h / (H / Hkv);
        std::vector<double> w(contexts[s]);
        double m = -1e300, sum = 0;
        for (int t = 0; t < contexts[s]; ++t) {
          double dot = 0;
          for (int d = 0; d < D; ++d)
            dot += to_float(q[(size_t(s) * H + h) * D + d]) * scale * at(k, s, t, kvh, d);
          m = std::max(m, w[t] = dot);
        }
        for (auto& x : w) sum += (x = std::exp(x - m));
        for (int d = 0; d < D; ++d) {
          double o = 0;
          for (int t = 0; t < contexts[s]; ++t) o += w[t] * at(v, s, t, kvh, d);
          out[(size_t(s) * H + h) * D + d] = o / sum;
        }
      }
    }
    return out;
  }
};

// How the partitions are merged: by the merge kernel, or by the last partition block of each (sequence, head
// run) to take a ticket, with the blocks run in index order or in reverse (so the last to finish is once the
// last partition and once the first).
enum class Merge { kKernel, kTickets, kTicketsReversed };

// Runs the partition kernel (and the merge kernel) on the problem; returns the largest error against the
// reference (infinity for a NaN).
template <typename T, int D>
double max_error(const Case& c, std::mt19937& rng, Merge merge) {
  Problem<T> p(c, D, rng);
  const int P = c.partition, partitions = (p.max_blocks * p.bs + P - 1) / P;
  std::vector<float> part_out(size_t(p.B) * p.H * partitions * D, NAN),
      part_max(size_t(p.B) * p.H * partitions, NAN), part_sum(part_max.size(), NAN);
  std::vector<T> out(p.q.size(), from_float<T>(NAN));
  PagedDecodeArgs a;
  a.out = out.data(), a.q = p.q.data(), a.k_pages = p.k.data(), a.v_pages = p.v.data();
  a.block_tables = p.tables.data(), a.context_lens = p.contexts.data();
  a.partial_out = part_out.data(), a.partial_max = part_max.data(), a.partial_sum = part_sum.data();
  a.batch = p.B, a.heads = p.H, a.kv_heads = p.Hkv, a.head_dim = D, a.block_size = p.bs;
  a.max_blocks = p.max_blocks, a.partitions = partitions, a.partition_size = P;
  a.scale = 1.0f / std::sqrt(float(D));
  const int splits = head_runs_per_kv_head(p.H, p.Hkv);
  std::vector<int> counters(size_t(p.B) * p.Hkv * splits, 0);
  if (merge != Merge::kKernel) a.counters = counters.data();
  cuda_emulation::launch(
      {unsigned(partitions), unsigned(p.Hkv * splits), unsigned(p.B)}, kThreads,
      Smem{D, int(sizeof(T)), P}.bytes(), [&] { partition_kernel<T, D>(a); },
      merge == Merge::kTicketsReversed);
  if (merge == Merge::kKernel)
    cuda_emulation::launch({unsigned(p.H), unsigned(p.B), 1}, 128, 0, [&] { merge_kernel<T>(a); });
  for (int n : counters)
    if (n != 0) return INFINITY;  // a counter not set back to 0 would break the next launch
  const std::vector<double> want = p.reference(a.scale);
  double err = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double got = to_float(out[i]);
    err = std::isnan(got) ? INFINITY : std::max(err, std::abs(got - want[i]));
  }
  return err;
}

TEST(PagedDecodeKernelEmulated, EqualsAttentionInDoubleOverThePages) {
  std::mt19937 rng(7);
  struct Run {
    const char* what;
    double (*fn)(const Case&, std::mt19937&, Merge);
    Case c;
    double tolerance;
  };
  const std::vector<Run> runs = {
      {"fp32 D=128 G=6, tile edges, P=64",
       max_error<float, 128>,
       {12, 2, 16, {1, 31, 32, 33, 150}, 64},
       2e-5},
      {"bf16 D=128 G=6, P=128", max_error<__nv_bfloat16, 128>, {12, 2, 16, {1, 300, 97}, 128}, 2e-2},
      {"fp16 D=64 MHA, P=256", max_error<__half, 64>, {8, 8, 32, {5, 700}, 256}, 5e-3},
      {"bf16 D=256 G=4, P=64", max_error<__nv_bfloat16, 256>, {16, 4, 16, {33, 300}, 64}, 2e-2},
      {"fp32 D=64 G=3, P=128", max_error<float, 64>, {9, 3, 16, {1, 2, 3, 90}, 128}, 2e-5},
      {"fp16 D=96 (12 chunks a row)", max_error<__half, 96>, {4, 2, 16, {17, 200}, 64}, 5e-3},
      {"fp32 D=32 MQA, P=256 edges", max_error<float, 32>, {4, 1, 8, {255, 256, 257}, 256}, 2e-5},
      {"bf16 G=20: two runs of heads", max_error<__nv_bfloat16, 128>, {40, 2, 16, {31, 65, 200}, 128}, 2e-2},
      {"fp32 D=160 (20 chunks a row)", max_error<float, 160>, {6, 2, 16, {65, 64, 63, 213}, 64}, 2e-5},
  };
  const char* merges[] = {"merge kernel", "tickets", "tickets, blocks reversed"};
  for (const auto& r : runs) {
    for (Merge m : {Merge::kKernel, Merge::kTickets, Merge::kTicketsReversed}) {
      const double err = r.fn(r.c, rng, m);
      EXPECT_LE(err, r.tolerance) << r.what << ", " << merges[static_cast<int>(m)];
      std::printf("%-32s %-25s max abs error %.3g\n", r.what, merges[static_cast<int>(m)], err);
    }
  }
}

}  // namespace
}  // namespace musacoder::engine
