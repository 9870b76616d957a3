// The engine on CUDA: the fused norm / SiLU·mul / RoPE kernels against the module ops; our paged decode kernel
// against SDPA over the gathered KV (fp32, fp16, bf16; several head sizes, GQA ratios and contexts spanning
// several partitions); the engine on a tiny Qwen3 model (head_dim 32, so the kernel and CUDA graphs run) giving
// transformers' greedy tokens with and without graphs; graphs captured before an in-place weight update (a
// trainer's step) decoding with the new weights; and the raw logprobs of K samples sharing a prefill equal to a
// teacher-forced forward. Skips without a GPU.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/decode_linear_cuda.h"
#include "engine/engine.h"
#include "engine/fused_ops_cuda.h"
#include "engine/paged_attention.h"
#include "engine/paged_attention_cuda.h"
#include "engine/token_mixer.h"
#include "model/checkpoint.h"
#include "model/decoder.h"
#include "support/python_reference.h"

namespace musacoder::engine {
namespace {

bool have_cuda() { return torch::cuda::is_available(); }

struct KernelCase {
  torch::ScalarType dtype;
  int64_t heads, kv_heads, head_dim, block_size;
  std::vector<int64_t> contexts;
  double tolerance;
};

// The kernel's partition size for a launch of this shape (0 in builds without the kernel).
int partition_size(int64_t batch, int64_t heads, int64_t kv_heads) {
#ifdef MUSACODER_ENGINE_CUDA
  return paged_decode_partition_size(static_cast<int>(batch), static_cast<int>(heads),
                                     static_cast<int>(kv_heads));
#else
  (void)batch, (void)heads, (void)kv_heads;
  return 0;
#endif
}

// n contexts spread over [1, longest] (a batch large enough to get the largest partitions).
std::vector<int64_t> spread_contexts(int64_t n, int64_t longest) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(1 + (i * 7919) % longest);
  return out;
}

TEST(PagedDecodeKernel, MatchesSdpaOnGatheredKv) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device";
  ASSERT_TRUE(cuda_decode_kernel_available(128)) << "this build has no CUDA decode kernel";
  const std::vector<KernelCase> cases = {
      {torch::kFloat, 12, 2, 128, 16, {1, 7, 513, 1500, 64}, 2e-5},
      {torch::kBFloat16, 12, 2, 128, 16, {1, 300, 1025, 2048}, 2e-2},
      {torch::kHalf, 8, 8, 64, 32, {5, 700}, 5e-3},
      {torch::kBFloat16, 16, 4, 256, 16, {33, 1200}, 2e-2},
      {torch::kFloat, 9, 3, 64, 16, {1, 2, 3, 900}, 2e-5},
      {torch::kHalf, 4, 2, 96, 16, {17, 600}, 5e-3},  // rows of threads that do not fill the block
      {torch::kFloat, 4, 1, 32, 8, {300, 255, 256, 257}, 2e-5},
      // 20 query heads per kv head: two runs of heads per kv head; tile edges (31, 32, 33); partitions of 128
      {torch::kBFloat16, 40, 2, 128, 16, {31, 32, 33, 95, 700}, 2e-2},
      {torch::kFloat, 6, 2, 160, 16, {65, 64, 63, 513}, 2e-5},  // 20 chunks per row, 6 threads' rows of heads
      {torch::kBFloat16, 16, 1, 128, 16, {1, 4000}, 2e-2},      // MQA-like: one kv head, a long context
      {torch::kHalf, 8, 4, 64, 16, spread_contexts(40, 1500),
       5e-3},  // 160 blocks per partition: 256 positions
  };
  torch::manual_seed(0);
  for (const auto& c : cases) {
    const int64_t B = static_cast<int64_t>(c.contexts.size());
    const int64_t longest = *std::max_element(c.contexts.begin(), c.contexts.end());
    const int64_t max_blocks = (longest + c.block_size - 1) / c.block_size + 2;  // wider than needed
    const int64_t num_blocks = B * max_blocks + 1;
    auto opts = torch::TensorOptions(torch::kCUDA).dtype(c.dtype);
    auto kp = torch::randn({num_blocks, c.block_size, c.kv_heads, c.head_dim}, opts);
    auto vp = torch::randn({num_blocks, c.block_size, c.kv_heads, c.head_dim}, opts);
    // Each sequence gets a random permutation of pages (non-contiguous, interleaved with the others).
    auto perm = torch::randperm(num_blocks - 1, torch::kLong) + 1;
    auto tables = perm.narrow(0, 0, B * max_blocks).view({B, max_blocks}).to(torch::kInt).to(torch::kCUDA);
    auto lens = torch::tensor(c.contexts, torch::kLong).to(torch::kInt).to(torch::kCUDA);
    auto q = torch::randn({B, c.heads, c.head_dim}, opts);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    auto ours = paged_decode(q, kp, vp, tables, lens, longest, scale, /*allow_kernel=*/true);
    auto ref = paged_decode_reference(q.to(torch::kFloat), kp.to(torch::kFloat), vp.to(torch::kFloat), tables, lens,
                                      longest, scale);
    const double err = (ours.to(torch::kFloat) - ref).abs().max().item<double>();
    std::printf(
        "GPU_RESULT paged_decode dtype=%s H=%ld Hkv=%ld D=%ld bs=%ld B=%ld partition=%d max_abs_err=%.3g\n",
        c10::toString(c.dtype), c.heads, c.kv_heads, c.head_dim, c.block_size, B,
        partition_size(B, c.heads, c.kv_heads), err);
    EXPECT_LE(err, c.tolerance) << c10::toString(c.dtype) << " D=" << c.head_dim;
  }
}

// The fused kernels against the module ops they replace, on the same inputs: float32 to rounding (1e-5),
// float16 / bfloat16 to one unit in the last place of a few elements (the mean's summation order differs).
#ifdef MUSACODER_ENGINE_CUDA
TEST(FusedOps, EqualTheModuleOps) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(11);
  for (auto dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
    auto rel = [](const torch::Tensor& a, const torch::Tensor& b) {
      return ((a.to(torch::kFloat) - b.to(torch::kFloat)).abs() / (b.to(torch::kFloat).abs() + 1e-2))
          .max()
          .item<double>();
    };
    const double tol = dtype == torch::kFloat ? 1e-5 : dtype == torch::kHalf ? 2e-3 : 1.6e-2;
    for (int64_t C : {64, 576, 1536, 5120}) {
      model::RMSNorm n(C, 1e-6);
      n->to(torch::kCUDA, dtype);
      {
        torch::NoGradGuard no_grad;
        n->weight.copy_(torch::rand({C}, o) + 0.5);
      }
      torch::Tensor h = torch::randn({37, C}, o), delta = torch::randn({37, C}, o);
      const torch::Tensor sum = h + delta, want = n(sum);
      torch::NoGradGuard no_grad;
      const torch::Tensor got = add_rms_norm_cuda(h, delta, n->weight, 1e-6);
      EXPECT_TRUE(torch::equal(h, sum)) << "the residual update is one rounded add";
      EXPECT_LE(rel(got, want), tol) << c10::toString(dtype) << " C=" << C;
      EXPECT_LE(rel(add_rms_norm_cuda(h, {}, n->weight, 1e-6), n(h)), tol) << "no delta";
    }
    torch::NoGradGuard no_grad;
    torch::Tensor gate = torch::randn({9, 1536}, o) * 4, up = torch::randn({9, 1536}, o);
    EXPECT_LE(rel(silu_mul_cuda(gate, up), torch::silu(gate) * up), tol) << c10::toString(dtype);
    torch::Tensor x = torch::randn({13, 6, 64}, o),
                  pos = torch::arange(13, o.dtype(torch::kFloat)).unsqueeze(1);
    torch::Tensor inv = torch::pow(10000.0, -torch::arange(0, 64, 2, o.dtype(torch::kFloat)) / 64.0);
    torch::Tensor emb = torch::cat({pos * inv, pos * inv}, -1);
    torch::Tensor cos = emb.cos().to(dtype), sin = emb.sin().to(dtype);
    EXPECT_LE(rel(rope_cuda(x, cos, sin), rotate(x, cos, sin)), tol) << c10::toString(dtype);
    // Strided rows, as the engine passes them: column blocks of one fused q/k/v or gate/up product.
    torch::Tensor fused = torch::randn({13, 6 * 64 + 2 * 64 + 2 * 64}, o);
    torch::Tensor xq = fused.narrow(1, 0, 6 * 64).view({13, 6, 64}),
                  xk = fused.narrow(1, 6 * 64, 128).view({13, 2, 64});
    EXPECT_LE(rel(rope_cuda(xq, cos, sin), rotate(xq, cos, sin)), tol) << "strided q";
    EXPECT_LE(rel(rope_cuda(xk, cos, sin), rotate(xk, cos, sin)), tol) << "strided k";
    model::RMSNorm qk_norm(64, 1e-6);
    qk_norm->to(torch::kCUDA, dtype);
    EXPECT_LE(rel(add_rms_norm_cuda(xk, {}, qk_norm->weight, 1e-6), qk_norm(xk)), tol)
        << "q/k norm of a strided view";
    torch::Tensor gu = torch::randn({9, 2 * 1536}, o) * 3;
    torch::Tensor g2 = gu.narrow(1, 0, 1536), u2 = gu.narrow(1, 1536, 1536);
    EXPECT_LE(rel(silu_mul_cuda(g2, u2), torch::silu(g2) * u2), tol) << "strided gate/up";
    std::printf("GPU_RESULT fused ops %s: add_rms_norm, silu_mul, rope within %.3g of the module ops\n",
                c10::toString(dtype), tol);
  }
}

// One kernel for a layer's two ropes and its KV write equals rope_cuda twice and write_kv, bit for bit, on
// the strided q/k/v column blocks of a fused projection, with rows scattered over the pages.
TEST(FusedOps, RopeWriteKvEqualsRopeThenWriteKv) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(12);
  for (auto dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
    const int64_t N = 11, H = 6, Hkv = 2, D = 128, blocks = 8, bs = 4;
    torch::NoGradGuard no_grad;
    torch::Tensor fused = torch::randn({N, (H + 2 * Hkv) * D}, o);
    torch::Tensor q = fused.narrow(1, 0, H * D).view({N, H, D}),
                  k = fused.narrow(1, H * D, Hkv * D).view({N, Hkv, D}),
                  v = fused.narrow(1, (H + Hkv) * D, Hkv * D).view({N, Hkv, D});
    torch::Tensor emb = torch::randn({N, D / 2}, o.dtype(torch::kFloat)) * 3;
    emb = torch::cat({emb, emb}, -1);
    torch::Tensor cos = emb.cos().to(dtype), sin = emb.sin().to(dtype);
    torch::Tensor slots = torch::randperm(blocks * bs, o.dtype(torch::kLong)).narrow(0, 0, N);
    torch::Tensor kp_want = torch::randn({blocks, bs, Hkv, D}, o),
                  vp_want = torch::randn({blocks, bs, Hkv, D}, o);
    torch::Tensor kp_got = kp_want.clone(), vp_got = vp_want.clone();
    torch::Tensor q_want = rope_cuda(q, cos, sin), k_want = rope_cuda(k, cos, sin);
    write_kv(kp_want, vp_want, slots, k_want, v);
    auto [q_got, k_got] = rope_write_kv_cuda(q, k, v, cos, sin, slots, kp_got, vp_got);
    EXPECT_TRUE(torch::equal(q_got, q_want)) << c10::toString(dtype);
    EXPECT_TRUE(torch::equal(k_got, k_want)) << c10::toString(dtype);
    EXPECT_TRUE(torch::equal(kp_got, kp_want)) << c10::toString(dtype) << ": k pages";
    EXPECT_TRUE(torch::equal(vp_got, vp_want)) << c10::toString(dtype) << ": v pages";
  }
  std::printf("GPU_RESULT rope_write_kv: q, k and both page tensors equal rope_cuda + write_kv (3 dtypes)\n");
}

// The decode-batch projections (decode_linear_cuda.h) against the kernels they replace followed by F.linear
// (cuBLAS): 1–4 rows, the shapes of a 1.5B model's q/k/v (bias), gate/up and down projections and a
// SmolLM2-sized LM head. The residual update is bit-equal; the product differs only by the order of the
// float accumulation (and a normed element that rounds the other way), so within the element type's
// rounding of the output's scale.
TEST(DecodeLinear, EqualsTheNormOrSiluMulKernelThenLinear) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(13);
  torch::NoGradGuard no_grad;
  struct Shape {
    int64_t n, k;
    bool bias;
  };
  double worst = 0;
  for (auto dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
    const double tol = dtype == torch::kFloat ? 1e-4 : dtype == torch::kHalf ? 4e-3 : 2e-2;
    auto rel = [](const torch::Tensor& got, const torch::Tensor& want) {
      const torch::Tensor g = got.to(torch::kFloat), w = want.to(torch::kFloat);
      return ((g - w).abs().max() / (w.abs().max() + 1e-6)).item<double>();
    };
    for (const Shape& s : {Shape{2048, 1536, true}, Shape{17920, 1536, false}, Shape{1536, 8960, false},
                           Shape{49152, 576, false}})
      for (int64_t rows = 1; rows <= kDecodeLinearMaxRows; ++rows) {
        const torch::Tensor w = torch::randn({s.n, s.k}, o) / std::sqrt(static_cast<double>(s.k));
        const torch::Tensor b = s.bias ? torch::randn({s.n}, o) : torch::Tensor();
        ASSERT_TRUE(decode_linear_takes(rows, w)) << s.n << "x" << s.k;
        const std::string what = std::string(c10::toString(dtype)) + " " + std::to_string(s.n) + "x" +
                                 std::to_string(s.k) + " rows " + std::to_string(rows);
        // The norm, with the residual update (the projections after a layer) and without (the first).
        const torch::Tensor norm_w = torch::rand({s.k}, o) + 0.5;
        torch::Tensor h = torch::randn({rows, s.k}, o), delta = torch::randn({rows, s.k}, o);
        torch::Tensor h_ref = h.clone();
        const torch::Tensor want =
            torch::nn::functional::linear(add_rms_norm_cuda(h_ref, delta, norm_w, 1e-6), w, b);
        const torch::Tensor got = norm_linear_cuda(h, delta, norm_w, 1e-6, w, b);
        EXPECT_TRUE(torch::equal(h, h_ref)) << what << ": h + delta";
        EXPECT_LE(rel(got, want), tol) << what << ": norm";
        worst = std::max(worst, rel(got, want) / tol);
        torch::Tensor h2 = h.clone();
        const torch::Tensor want2 =
            torch::nn::functional::linear(add_rms_norm_cuda(h2, {}, norm_w, 1e-6), w, b);
        EXPECT_LE(rel(norm_linear_cuda(h, {}, norm_w, 1e-6, w, b), want2), tol) << what << ": norm, no delta";
        // SiLU·mul on the two halves of one gate/up product, as the engine passes them.
        const torch::Tensor gu = torch::randn({rows, 2 * s.k}, o) * 3;
        const torch::Tensor g = gu.narrow(1, 0, s.k), u = gu.narrow(1, s.k, s.k);
        const torch::Tensor want3 = torch::nn::functional::linear(silu_mul_cuda(g, u), w, b);
        const torch::Tensor got3 = silu_mul_linear_cuda(g, u, w, b);
        EXPECT_LE(rel(got3, want3), tol) << what << ": silu_mul";
        worst = std::max(worst, rel(got3, want3) / tol);
        // No prologue (the o projection), on a strided row view.
        const torch::Tensor x = gu.narrow(1, s.k / 2, s.k);
        const torch::Tensor want4 = torch::nn::functional::linear(x, w, b),
                            got4 = decode_linear_cuda(x, w, b);
        EXPECT_LE(rel(got4, want4), tol) << what << ": plain";
        worst = std::max(worst, rel(got4, want4) / tol);
      }
  }
  std::printf(
      "GPU_RESULT decode_linear: norm / silu_mul + linear within %.2f of the tolerance (3 dtypes, 1-4 "
      "rows)\n",
      worst);
}

// The q/k/v epilogue: norm_qkv_rope_cuda equals norm_linear_cuda followed by rope_write_kv_cuda bit for bit
// (an output's float sum is the same whichever warp computes it), q and both page tensors, rows scattered
// over the pages; the 1.5B model's attention shape with its q/k/v bias.
TEST(DecodeLinear, QkvWithRopeEqualsNormLinearThenRopeWriteKv) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(14);
  torch::NoGradGuard no_grad;
  const int H = 12, Hkv = 2, D = 128;
  const int64_t k = 1536, n = (H + 2 * Hkv) * D, blocks = 6, bs = 16;
  for (auto dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16})
    for (int64_t rows = 1; rows <= kDecodeLinearMaxRows; ++rows) {
      auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
      const torch::Tensor w = torch::randn({n, k}, o) / std::sqrt(static_cast<double>(k)),
                          b = torch::randn({n}, o);
      const torch::Tensor norm_w = torch::rand({k}, o) + 0.5, delta = torch::randn({rows, k}, o);
      torch::Tensor h1 = torch::randn({rows, k}, o), h2 = h1.clone();
      torch::Tensor emb = torch::randn({rows, D / 2}, o.dtype(torch::kFloat)) * 3;
      emb = torch::cat({emb, emb}, -1);
      const torch::Tensor cos = emb.cos().to(dtype), sin = emb.sin().to(dtype);
      const torch::Tensor slots = torch::randperm(blocks * bs, o.dtype(torch::kLong)).narrow(0, 0, rows);
      torch::Tensor kp_want = torch::randn({blocks, bs, Hkv, D}, o),
                    vp_want = torch::randn({blocks, bs, Hkv, D}, o);
      torch::Tensor kp_got = kp_want.clone(), vp_got = vp_want.clone();
      const torch::Tensor qkv = norm_linear_cuda(h1, delta, norm_w, 1e-6, w, b);
      const auto q_want = rope_write_kv_cuda(qkv.narrow(1, 0, H * D).view({rows, H, D}),
                                             qkv.narrow(1, H * D, Hkv * D).view({rows, Hkv, D}),
                                             qkv.narrow(1, (H + Hkv) * D, Hkv * D).view({rows, Hkv, D}), cos,
                                             sin, slots, kp_want, vp_want)
                              .first;
      const torch::Tensor q_got =
          norm_qkv_rope_cuda(h2, delta, norm_w, 1e-6, w, b, H, Hkv, D, cos, sin, slots, kp_got, vp_got);
      const std::string what = std::string(c10::toString(dtype)) + " rows " + std::to_string(rows);
      EXPECT_TRUE(torch::equal(h1, h2)) << what << ": h + delta";
      EXPECT_TRUE(torch::equal(q_got, q_want)) << what << ": q";
      EXPECT_TRUE(torch::equal(kp_got, kp_want)) << what << ": k pages";
      EXPECT_TRUE(torch::equal(vp_got, vp_want)) << what << ": v pages";
    }
  std::printf(
      "GPU_RESULT decode_linear rope: q, k and v pages equal norm_linear + rope_write_kv (3 dtypes, 1-4 "
      "rows)\n");
}
#else
TEST(FusedOps, EqualTheModuleOps) {
  GTEST_SKIP() << "no CUDA device (the fused kernels are built with CUDA libtorch)";
}
#endif

std::vector<std::vector<int32_t>> json_ids(const nlohmann::json& j) { return j.get<std::vector<std::vector<int32_t>>>(); }

// The tiny checkpoints and transformers' greedy tokens of tests/integration/engine/engine_reference.py.
Result<std::filesystem::path> engine_reference() {
  return testing::cached_python_reference(
      "engine", std::filesystem::path(MUSACODER_SOURCE_DIR) / "tests/integration/engine/engine_reference.py",
      {"make"}, std::chrono::seconds(600));
}

// The tiny Qwen3's ref.json in the engine reference: its prompts and transformers' greedy tokens.
nlohmann::json qwen3_reference(const std::filesystem::path& dir) {
  std::ifstream f(dir / "qwen3" / "ref.json");
  return nlohmann::json::parse(f);
}

std::vector<Request> greedy_requests(const std::vector<std::vector<int32_t>>& prompts,
                                     int64_t max_new_tokens) {
  std::vector<Request> rs;
  for (const auto& p : prompts) {
    Request r;
    r.prompt_ids = p;
    r.sampling.temperature = 0, r.sampling.max_new_tokens = max_new_tokens;
    rs.push_back(r);
  }
  return rs;
}

// Prompts prefilled together in one step (varlen flash over their rows, StepContext::prefill_cu_seqlens) give
// the first token's raw distribution they get prefilled one at a time (per-sequence attention), in bf16: the
// largest of the top logprobs (robust to ties) within bf16 noise.
TEST(EngineCuda, PrefillsTogetherEqualPrefillsOneAtATimeInBf16) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device";
  auto dir = engine_reference();
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  const auto prompts = json_ids(qwen3_reference(*dir)["prompts"]);
  ASSERT_GE(prompts.size(), 2u);
  auto first_top = [&](bool together) {
    EngineOptions o;
    o.max_model_len = 256;
    if (!together) o.max_num_seqs = 1;  // one sequence per step: each prompt prefilled alone
    auto e = Engine::load(*dir / "qwen3", {"cuda", "bfloat16"}, o);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    auto requests = greedy_requests(prompts, 1);
    for (auto& r : requests) r.sampling.top_logprobs = 5;
    std::vector<float> best;
    for (const auto& out : (*e)->generate(requests))
      best.push_back(out.samples.at(0).top_logprobs.at(0).at(0).logprob);
    return best;
  };
  const auto together = first_top(true), alone = first_top(false);
  ASSERT_EQ(together.size(), alone.size());
  double worst = 0;
  for (std::size_t i = 0; i < together.size(); ++i)
    worst = std::max(worst, double(std::abs(together[i] - alone[i])));
  std::printf("GPU_RESULT prefill together vs alone (bf16, %zu prompts): max |top-1 logprob diff| %.3g\n",
              together.size(), worst);
  EXPECT_LE(worst, 0.05);
}

TEST(EngineCuda, GreedyEqualsTransformersWithAndWithoutGraphs) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device";
  auto dir = engine_reference();
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  const auto ref = qwen3_reference(*dir);
  const auto prompts = json_ids(ref["prompts"]), greedy = json_ids(ref["greedy"]);
  std::vector<std::vector<std::vector<int32_t>>> runs;
  for (bool graphs : {true, false}) {
    EngineOptions o;
    o.cuda_graphs = graphs;
    o.max_model_len = 256;
    auto e = Engine::load(*dir / "qwen3", {"cuda", "float32"}, o);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    std::vector<std::vector<int32_t>> tokens;
    for (const auto& out : (*e)->generate(greedy_requests(prompts, static_cast<int64_t>(greedy[0].size()))))
      tokens.push_back(out.samples.at(0).token_ids);
    const auto stats = (*e)->stats();
    std::printf("GPU_RESULT engine cuda graphs=%d steps=%ld graph_replays=%ld\n", graphs,
                static_cast<long>(stats.steps), static_cast<long>(stats.cuda_graph_replays));
    if (graphs) EXPECT_GT(stats.cuda_graph_replays, 0);
    else EXPECT_EQ(stats.cuda_graph_replays, 0);
    runs.push_back(tokens);
  }
  for (std::size_t i = 0; i < greedy.size(); ++i) {
    EXPECT_EQ(runs[0][i], greedy[i]) << "graphs, prompt " << i;
    EXPECT_EQ(runs[1][i], greedy[i]) << "eager, prompt " << i;
  }
}

// Several decode steps per host round trip (EngineOptions::decode_steps, the CUDA default) against one step
// at a time, in bf16 with graphs: every sequence runs to the same length, so both decode the same batch
// through the same graph and the tokens and logprobs must be identical, not merely close.
TEST(EngineCuda, MultiStepDecodeEqualsOneStepAtATimeBitForBit) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device";
  auto dir = engine_reference();
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  const auto prompts = json_ids(qwen3_reference(*dir)["prompts"]);
  std::vector<Request> rs = greedy_requests(prompts, 40);
  for (std::size_t i = 0; i < rs.size(); ++i) {
    rs[i].sampling.ignore_eos = true;
    if (i % 2 == 0) continue;
    rs[i].sampling.temperature = 0.9, rs[i].sampling.top_p = 0.95, rs[i].sampling.n = 3;
    rs[i].sampling.seed = 11 + i, rs[i].sampling.top_logprobs = 2;
  }
  std::vector<std::vector<Sample>> runs;
  for (int steps : {1, 8}) {
    EngineOptions o;
    o.max_model_len = 256;
    o.decode_steps = steps;
    auto e = Engine::load(*dir / "qwen3", {"cuda", "bfloat16"}, o);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    std::vector<Sample> samples;
    for (const auto& out : (*e)->generate(rs))
      for (const auto& s : out.samples) samples.push_back(s);
    const auto st = (*e)->stats();
    std::printf("GPU_RESULT engine decode_steps=%d: steps %ld, multi-step rounds %ld, graph replays %ld\n",
                steps, static_cast<long>(st.steps), static_cast<long>(st.multi_step_rounds),
                static_cast<long>(st.cuda_graph_replays));
    if (steps > 1) {
      EXPECT_GT(st.multi_step_rounds, 0);
    }
    EXPECT_GT(st.cuda_graph_replays, 0);
    runs.push_back(samples);
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (std::size_t i = 0; i < runs[0].size(); ++i) {
    EXPECT_EQ(runs[1][i].token_ids, runs[0][i].token_ids) << "sample " << i;
    EXPECT_EQ(runs[1][i].logprobs, runs[0][i].logprobs) << "sample " << i;
    EXPECT_EQ(runs[1][i].raw_logprobs, runs[0][i].raw_logprobs) << "sample " << i;
  }
}

// A trainer updates the weights in place between rollouts (train-rl: the optimizer's step and the bf16 copy of
// its fp32 masters): graphs captured before the update must decode with the new weights, as an eager engine on
// the same model does — so the rollouts need no recapture.
TEST(EngineCuda, GraphsCapturedBeforeAnInPlaceWeightUpdateDecodeWithTheNewWeights) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device";
  auto dir = engine_reference();
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  const auto prompts = json_ids(qwen3_reference(*dir)["prompts"]);
  auto model = model::load_pretrained(*dir / "qwen3", {"cuda", "float32"});
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto engine_with = [&](bool graphs) {
    EngineOptions o;
    o.cuda_graphs = graphs;
    o.max_model_len = 256;
    o.kv_cache_gb = 1;  // two engines at once
    auto e = Engine::create(*model, std::nullopt, {}, o);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    return std::move(e).value();
  };
  auto greedy = [&](Engine& e) {
    std::vector<Request> rs = greedy_requests(prompts, 24);
    for (auto& r : rs) r.sampling.ignore_eos = true;
    std::vector<Sample> out;
    for (auto& o : e.generate(rs)) out.push_back(o.samples.at(0));
    return out;
  };
  auto graphed = engine_with(true);
  const auto before = greedy(*graphed);
  ASSERT_GT(graphed->stats().cuda_graph_replays, 0);
  {
    torch::NoGradGuard no_grad;
    torch::manual_seed(3);
    for (auto& p : (*model)->parameters()) p.add_(torch::randn_like(p) * 0.05);  // in place: same addresses
  }
  const auto after = greedy(*graphed);
  const auto eager = greedy(*engine_with(false));
  int changed = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    changed += before[i].token_ids != after[i].token_ids;
    EXPECT_EQ(after[i].token_ids, eager[i].token_ids) << "prompt " << i;
    for (std::size_t t = 0; t < after[i].raw_logprobs.size() && t < eager[i].raw_logprobs.size(); ++t)
      EXPECT_NEAR(after[i].raw_logprobs[t], eager[i].raw_logprobs[t], 1e-4) << "prompt " << i << " token " << t;
  }
  std::printf("GPU_RESULT engine graphs after an in-place update: %d of %zu greedy outputs changed\n", changed,
              prompts.size());
  EXPECT_GT(changed, 0) << "the update should change what the model generates";
}

// How far the engine's raw logprob of each sampled token is from a teacher-forced forward over prompt ·
// sample on the GPU, for K samples of each prompt that share its prefill (copy-on-write blocks) and decode
// side by side. A block written by two samples, a stale block table or a graph replaying another batch's
// inputs shows up as a token whose logprob is far from its forward's.
struct LogprobCheck {
  int64_t tokens = 0, far = 0;
  double worst = 0;
};

LogprobCheck check_sampled_logprobs(model::Decoder& model, const std::vector<std::vector<int32_t>>& prompts,
                                    int64_t max_new_tokens, int64_t max_model_len, bool graphs, double far) {
  std::vector<Request> rs;
  for (uint64_t i = 0; i < prompts.size(); ++i) {
    Request r;
    r.prompt_ids = prompts[i];
    r.sampling.temperature = 0.7, r.sampling.top_p = 0.95, r.sampling.seed = 100 + i, r.sampling.n = 4;
    r.sampling.max_new_tokens = max_new_tokens - static_cast<int64_t>(i % 3) * (max_new_tokens / 5);
    r.sampling.ignore_eos = true;
    rs.push_back(r);
  }
  EngineOptions o;
  o.cuda_graphs = graphs;
  o.max_model_len = max_model_len;
  o.kv_cache_gb = 2;
  auto e = Engine::create(model, std::nullopt, {}, o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  if (!e.ok()) return {};
  torch::NoGradGuard no_grad;
  LogprobCheck c;
  for (std::size_t i = 0; const auto& out : (*e)->generate(rs)) {
    EXPECT_TRUE(out.status.ok()) << out.status.to_string();
    const auto& prompt = rs[i++].prompt_ids;
    for (const auto& s : out.samples) {
      std::vector<int64_t> all(prompt.begin(), prompt.end());
      all.insert(all.end(), s.token_ids.begin(), s.token_ids.end());
      torch::Tensor logp = model->forward({torch::tensor(all).unsqueeze(0).to(torch::kCUDA)})[0]
                               .to(torch::kFloat)
                               .log_softmax(-1)
                               .to(torch::kCPU, torch::kDouble);
      const int64_t P = static_cast<int64_t>(prompt.size());
      for (std::size_t t = 0; t < s.token_ids.size(); ++t, ++c.tokens) {
        const double d = std::abs(s.raw_logprobs[t] -
                                  logp[P - 1 + static_cast<int64_t>(t)][s.token_ids[t]].item<double>());
        c.worst = std::max(c.worst, d);
        c.far += d > far;
      }
    }
  }
  if (graphs) {
    EXPECT_GT((*e)->stats().cuda_graph_replays, 0);
  }
  return c;
}

TEST(EngineCuda, SampledRawLogprobsEqualTeacherForcingWithSharedPrefixes) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device";
  auto dir = engine_reference();
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  const auto ref_prompts = json_ids(qwen3_reference(*dir)["prompts"]);
  std::vector<std::vector<int32_t>> prompts;
  for (std::size_t i = 0; i < 12; ++i) prompts.push_back(ref_prompts[i % ref_prompts.size()]);
  auto model = model::load_pretrained(*dir / "qwen3", {"cuda", "float32"});
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  for (bool graphs : {true, false}) {
    const LogprobCheck c = check_sampled_logprobs(*model, prompts, 110, 256, graphs, 1e-3);
    std::printf(
        "GPU_RESULT engine sampled n=4 graphs=%d: %ld tokens, max |raw logprob - forward| %.3g, %ld over "
        "1e-3\n",
        graphs, static_cast<long>(c.tokens), c.worst, static_cast<long>(c.far));
    EXPECT_GT(c.tokens, 0);
    EXPECT_EQ(c.far, 0) << (graphs ? "graphs" : "eager");
  }
}

// The same on a real checkpoint (MUSACODER_GPU_ENGINE_MODEL=DIR, e.g. a learning demo's SFT model, fp32) with
// long prompts of random ids: contexts of ~1,000 tokens across many blocks and decode-kernel partitions.
TEST(EngineCuda, SampledRawLogprobsOfARealCheckpointEqualTeacherForcing) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA device";
  const char* dir = std::getenv("MUSACODER_GPU_ENGINE_MODEL");
  if (dir == nullptr) GTEST_SKIP() << "set MUSACODER_GPU_ENGINE_MODEL to a checkpoint directory";
  auto model = model::load_pretrained(dir, {"cuda", "float32"});
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  torch::manual_seed(5);
  const int64_t vocab = (*model)->config().vocab_size;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 16; ++i) {
    torch::Tensor ids = torch::randint(vocab, {600 + 37 * i}, torch::kLong);
    prompts.emplace_back(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
  }
  for (bool graphs : {true, false}) {
    const LogprobCheck c = check_sampled_logprobs(*model, prompts, 400, 2048, graphs, 1e-2);
    std::printf(
        "GPU_RESULT engine %s sampled n=4 graphs=%d: %ld tokens, max |raw logprob - forward| %.3g, %ld "
        "over 1e-2\n",
        dir, graphs, static_cast<long>(c.tokens), c.worst, static_cast<long>(c.far));
    EXPECT_EQ(c.far, 0) << (graphs ? "graphs" : "eager");
  }
}

}  // namespace
}  // namespace musacoder::engine
