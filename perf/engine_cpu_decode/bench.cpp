// Decode attention over the paged KV cache on the CPU, float32: our loop kernel (paged_decode_cpu) against
// the reference the engine used before it (SDPA over the context gathered from the pages, padded and masked),
// in one run on the same inputs. Per shape: the largest difference, the median wall time of each, and the
// ratio.
//   engine_cpu_decode_bench [--iters N] [--threads T]
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "engine/paged_attention.h"

namespace {

using musacoder::engine::paged_decode_cpu;
using musacoder::engine::paged_decode_reference;

struct Shape {
  const char* name;
  int64_t batch, heads, kv_heads, head_dim, context;
};

struct Inputs {
  torch::Tensor q, k_pages, v_pages, block_tables, context_lens;
  int64_t max_context = 0;
  double scale = 1.0;
};

// Pages in a shuffled order (as a long-running cache holds them), contexts uniform in [context/2, context].
Inputs make_inputs(const Shape& s, int64_t block_size) {
  Inputs in;
  const int64_t blocks_per_seq = (s.context + block_size - 1) / block_size;
  const int64_t num_blocks = s.batch * blocks_per_seq;
  in.q = torch::randn({s.batch, s.heads, s.head_dim});
  in.k_pages = torch::randn({num_blocks, block_size, s.kv_heads, s.head_dim});
  in.v_pages = torch::randn({num_blocks, block_size, s.kv_heads, s.head_dim});
  in.block_tables = torch::randperm(num_blocks, torch::kInt).view({s.batch, blocks_per_seq});
  in.context_lens = torch::randint(s.context / 2, s.context + 1, {s.batch}, torch::kInt);
  in.max_context = in.context_lens.max().item<int64_t>();
  in.scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  return in;
}

template <typename F>
double median_ms(F&& f, int iters) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CPU paged decode: our kernel vs gathered-KV SDPA"};
  int iters = 20, threads = 0;
  app.add_option("--iters", iters, "timed calls per path (median reported)")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "torch intra-op threads (0: default)")->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  if (threads > 0) torch::set_num_threads(threads);
  torch::manual_seed(0);
  torch::NoGradGuard no_grad;
  const Shape shapes[] = {
      {"quickstart model, 32 samples", 32, 2, 2, 64, 1024},
      {"Qwen2.5-0.5B-like, batch 8", 8, 14, 2, 64, 2048},
      {"Qwen2.5-Coder-1.5B-like, batch 4", 4, 12, 2, 128, 4096},
      {"one long sequence", 1, 16, 4, 128, 8192},
  };
  std::printf("torch threads %d, block size 16, %d timed calls each\n", torch::get_num_threads(), iters);
  std::printf("%-34s %10s %12s %12s %8s\n", "shape (B,H,kvH,D,ctx)", "max|diff|", "sdpa ms", "kernel ms",
              "ratio");
  for (const Shape& s : shapes) {
    const Inputs in = make_inputs(s, 16);
    auto ref = [&] {
      return paged_decode_reference(in.q, in.k_pages, in.v_pages, in.block_tables, in.context_lens,
                                    in.max_context, in.scale);
    };
    auto ours = [&] {
      return paged_decode_cpu(in.q, in.k_pages, in.v_pages, in.block_tables, in.context_lens, in.scale);
    };
    const double diff = (ref() - ours()).abs().max().item<double>();
    const double ref_ms = median_ms(ref, iters), our_ms = median_ms(ours, iters);
    std::printf("%-34s %10.2e %12.3f %12.3f %7.2fx\n", s.name, diff, ref_ms, our_ms, ref_ms / our_ms);
    std::printf("  (%lld,%lld,%lld,%lld,%lld)\n", static_cast<long long>(s.batch),
                static_cast<long long>(s.heads), static_cast<long long>(s.kv_heads),
                static_cast<long long>(s.head_dim), static_cast<long long>(s.context));
    if (diff > 1e-4) {
      std::fprintf(stderr, "kernel and reference disagree (%.3g) on %s\n", diff, s.name);
      return 1;
    }
  }
  return 0;
}
