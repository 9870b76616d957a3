// Unit tests of the engine's parts that need no checkpoint: the block allocator, the cache pool's
// copy-on-write and state snapshots, paged decode attention against plain attention, stop strings across
// pieces, and the sampler (counter-based uniforms, truncation rules, greedy, logprobs).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/block_allocator.h"
#include "engine/cache.h"
#include "engine/detokenizer.h"
#include "engine/paged_attention.h"
#include "engine/sampler.h"

namespace musacoder::engine {
namespace {

TEST(BlockAllocator, RefCountsAndReuse) {
  BlockAllocator a(4);  // blocks 1..3
  EXPECT_EQ(a.num_allocatable(), 3);
  auto b1 = a.allocate(), b2 = a.allocate(), b3 = a.allocate();
  ASSERT_TRUE(b1 && b2 && b3);
  EXPECT_NE(*b1, 0);
  EXPECT_FALSE(a.allocate().has_value());
  a.retain(*b2);
  a.release(*b2);
  EXPECT_EQ(a.num_free(), 0);  // still one owner
  a.release(*b2);
  EXPECT_EQ(a.num_free(), 1);
  EXPECT_EQ(*a.allocate(), *b2);  // the freed block comes back
}

CachePool small_pool(int32_t blocks, bool with_state) {
  std::vector<LayerCacheSpec> layers(2);
  layers[0].kv_heads = 1, layers[0].head_dim = 2;
  if (with_state) {
    layers[1].kind = LayerKind::kLinearAttention;
    layers[1].state_shapes = {{3}, {2, 2}};
  } else {
    layers[1] = layers[0];
  }
  return CachePool(layers, /*block_size=*/4, blocks, /*num_state_slots=*/4,
                   torch::TensorOptions(torch::kFloat));
}

TEST(CachePool, ForkSharesBlocksAndCopiesOnWrite) {
  CachePool pool = small_pool(8, false);
  SequenceCache parent, child;
  ASSERT_TRUE(pool.prepare_write(parent, 0, 6));  // positions 0..5: two blocks, the second half full
  ASSERT_EQ(parent.blocks.size(), 2u);
  pool.k(0)[parent.blocks[1]].fill_(7.0);
  ASSERT_TRUE(pool.fork(parent, 6, child));
  EXPECT_EQ(child.blocks, parent.blocks);
  EXPECT_EQ(pool.blocks().ref_count(parent.blocks[1]), 2);
  // The child writes position 6, in the shared second block: it gets its own copy first.
  EXPECT_EQ(pool.blocks_needed(child, 6, 7), 1);
  ASSERT_TRUE(pool.prepare_write(child, 6, 7));
  EXPECT_EQ(child.blocks[0], parent.blocks[0]);
  EXPECT_NE(child.blocks[1], parent.blocks[1]);
  EXPECT_TRUE(torch::equal(pool.k(0)[child.blocks[1]], pool.k(0)[parent.blocks[1]]));
  EXPECT_EQ(pool.blocks().ref_count(parent.blocks[1]), 1);
  // Now the parent owns its block alone: no copy.
  EXPECT_EQ(pool.blocks_needed(parent, 6, 7), 0);
  const int32_t free_before = pool.blocks().num_free();
  pool.release(child);
  EXPECT_EQ(pool.blocks().num_free(), free_before + 1);  // the shared first block stays with the parent
  pool.release(parent);
  EXPECT_EQ(pool.blocks().num_free(), 7);
}

TEST(CachePool, PrepareWriteFailsWithoutChange) {
  CachePool pool = small_pool(3, false);  // 2 allocatable blocks = 8 positions
  SequenceCache s;
  EXPECT_FALSE(pool.prepare_write(s, 0, 9));
  EXPECT_TRUE(s.blocks.empty());
  EXPECT_EQ(pool.blocks().num_free(), 2);
  EXPECT_TRUE(pool.prepare_write(s, 0, 8));
}

TEST(CachePool, StateSlotsAreSnapshotsNotShared) {
  CachePool pool = small_pool(8, true);
  SequenceCache parent, child;
  ASSERT_TRUE(pool.ensure_state_slot(parent));
  pool.state(1)[1][parent.state_slot].fill_(3.0);
  ASSERT_TRUE(pool.fork(parent, 0, child));
  ASSERT_NE(child.state_slot, parent.state_slot);
  EXPECT_TRUE(torch::equal(pool.state(1)[1][child.state_slot], pool.state(1)[1][parent.state_slot]));
  pool.state(1)[1][child.state_slot].fill_(5.0);  // the child's recurrence moves on alone
  EXPECT_EQ(pool.state(1)[1][parent.state_slot].sum().item<float>(), 12.0f);
}

TEST(PagedAttention, DecodeReferenceEqualsPlainAttention) {
  torch::manual_seed(0);
  const int64_t bs = 4, H = 4, Hkv = 2, D = 8;
  torch::Tensor kp = torch::randn({16, bs, Hkv, D}), vp = torch::randn({16, bs, Hkv, D});
  // Two sequences: lengths 6 (blocks 3, 9) and 9 (blocks 5, 1, 12), interleaved pages.
  std::vector<std::vector<int64_t>> tables = {{3, 9, 0}, {5, 1, 12}};
  std::vector<int64_t> lens = {6, 9};
  torch::Tensor q = torch::randn({2, H, D});
  auto out = paged_decode_reference(q, kp, vp, torch::tensor({3, 9, 0, 5, 1, 12}, torch::kInt).view({2, 3}),
                                    torch::tensor({6, 9}, torch::kInt), 9, 1.0 / std::sqrt(8.0));
  for (int b = 0; b < 2; ++b) {
    std::vector<torch::Tensor> ks, vs;
    for (int64_t p = 0; p < lens[b]; ++p) {
      ks.push_back(kp[tables[b][p / bs]][p % bs]);
      vs.push_back(vp[tables[b][p / bs]][p % bs]);
    }
    auto k = torch::stack(ks).repeat_interleave(H / Hkv, 1);  // (L, H, D)
    auto v = torch::stack(vs).repeat_interleave(H / Hkv, 1);
    auto w = (torch::einsum("hd,lhd->hl", {q[b], k}) / std::sqrt(8.0)).softmax(-1);
    auto expect = torch::einsum("hl,lhd->hd", {w, v});
    EXPECT_LT((out[b] - expect).abs().max().item<double>(), 1e-5) << "sequence " << b;
  }
}

TEST(PagedAttention, CpuKernelEqualsReference) {
  torch::manual_seed(1);
  const int64_t bs = 16, H = 4, Hkv = 2, D = 64, B = 5, max_blocks = 8;
  torch::Tensor kp = torch::randn({64, bs, Hkv, D}), vp = torch::randn({64, bs, Hkv, D});
  // Shuffled pages; lengths 1 (one row), 16 (one full block), 17 (a row into the next), 100, 128 (all
  // blocks).
  torch::Tensor tables = torch::randperm(64, torch::kInt).narrow(0, 0, B * max_blocks).view({B, max_blocks});
  torch::Tensor lens = torch::tensor({1, 16, 17, 100, 128}, torch::kInt);
  torch::Tensor q = torch::randn({B, H, D});
  ASSERT_TRUE(cpu_decode_kernel_applies(q, kp));
  const double scale = 1.0 / std::sqrt(64.0);
  auto expect = paged_decode_reference(q, kp, vp, tables, lens, 128, scale);
  auto got = paged_decode_cpu(q, kp, vp, tables, lens, scale);
  EXPECT_LT((got - expect).abs().max().item<double>(), 1e-5);
  // paged_decode takes the kernel on float32 CPU tensors; without allow_kernel it is the reference.
  EXPECT_TRUE(torch::equal(paged_decode(q, kp, vp, tables, lens, 128, scale, true), got));
  EXPECT_TRUE(torch::equal(paged_decode(q, kp, vp, tables, lens, 128, scale, false), expect));
  EXPECT_FALSE(cpu_decode_kernel_applies(q.to(torch::kBFloat16), kp.to(torch::kBFloat16)));
  // A GQA group of 6 heads on one kv head, and a head_dim that is not a multiple of the 8-lane dot.
  torch::Tensor kp1 = torch::randn({64, bs, 1, 20}), vp1 = torch::randn({64, bs, 1, 20}),
                q1 = torch::randn({B, 6, 20});
  EXPECT_LT((paged_decode_cpu(q1, kp1, vp1, tables, lens, 0.3) -
             paged_decode_reference(q1, kp1, vp1, tables, lens, 128, 0.3))
                .abs()
                .max()
                .item<double>(),
            1e-5);
}

TEST(StopChecker, FindsStopStringsAcrossPiecesAndHoldsPrefixesBack) {
  StopChecker c({"STOP", "</end>"});
  std::string shown;
  for (std::string piece : {"abc S", "T", "O", "xyz"}) shown += c.append(piece).emit;
  EXPECT_EQ(shown, "abc S");  // "STOP" never completed; the last 5 bytes could still start "</end>"
  shown += c.flush();
  EXPECT_EQ(shown, "abc STOxyz");
  StopChecker d({"STOP", "</end>"});
  shown.clear();
  StopChecker::Piece p;
  for (std::string piece : {"12</", "en", "d>34"}) {
    p = d.append(piece);
    shown += p.emit;
    if (p.stopped) break;
  }
  EXPECT_TRUE(p.stopped);
  EXPECT_EQ(p.matched, "</end>");
  EXPECT_EQ(shown, "12");
  EXPECT_EQ(d.text(), "12");
}

TEST(StopChecker, EarliestMatchWinsAndUtf8IsNeverCut) {
  StopChecker c({"bc", "abcd"});
  auto p = c.append("xabcd");
  EXPECT_TRUE(p.stopped);
  EXPECT_EQ(p.matched, "abcd");  // starts first
  EXPECT_EQ(c.text(), "x");
  StopChecker u({"zzzz"});
  auto q = u.append("a\xC3\xA9xy");  // "aéxy": holding back 3 bytes would cut é in two; it backs up to 'a'
  EXPECT_EQ(q.emit, "a");
  EXPECT_EQ(u.flush(), "\xC3\xA9xy");
}

TEST(Sampler, UniformsAreDeterministicAndInRange) {
  Sampler s(1000, torch::kCPU);
  auto u1 = s.uniforms({sample_key(42, 0), sample_key(42, 1)});
  auto u2 = s.uniforms({sample_key(42, 1)});
  EXPECT_TRUE(torch::equal(u1[1], u2[0]));  // a row's draw does not depend on its batch
  EXPECT_GT(u1.min().item<float>(), 0.0f);
  EXPECT_LT(u1.max().item<float>(), 1.0f);
  EXPECT_NEAR(u1.mean().item<double>(), 0.5, 0.03);
  EXPECT_FALSE(torch::equal(u1[0], u1[1]));
  EXPECT_NE(sample_seed(42, 1), sample_seed(42, 2));
  // The extreme hashes stay strictly inside (0, 1), so the race's −log(−log u) is finite for every token and
  // a token the truncation removed (log q = −inf) can never win.
  const std::vector<int64_t> hashes = {0, 1, (int64_t{1} << 32) - 512, (int64_t{1} << 32) - 256,
                                       (int64_t{1} << 32) - 1};
  auto edge = uniform_of_hash(torch::tensor(hashes, torch::kLong));
  EXPECT_GT(edge.min().item<float>(), 0.0f);
  EXPECT_LT(edge.max().item<float>(), 1.0f);
  EXPECT_TRUE(torch::isfinite(torch::log(-torch::log(edge))).all().item<bool>());
}

// A drawn token always has q > 0, across enough draws over a large vocabulary that a hash at the top of the
// range occurs (with the old 24-bit uniforms one draw in ~340 at this size picked a removed token).
TEST(Sampler, TruncatedTokensAreNeverDrawnOverALargeVocabulary) {
  const int64_t V = 49152;
  Sampler s(V, torch::kCPU);
  SamplingParams p;
  p.temperature = 0.7, p.top_p = 0.95;
  torch::manual_seed(0);
  torch::Tensor logits = torch::randn({64, V}) * 0.5;
  logits.narrow(1, 0, 4).add_(12.0);  // four tokens hold nearly all the mass: the rest is truncated
  int64_t draws = 0;
  for (int64_t step = 0; step < 16; ++step) {  // the old 24-bit uniforms drew a removed token at step 7
    std::vector<SamplingRow> rows;
    for (int r = 0; r < 64; ++r) rows.push_back({&p, sample_seed(7, r), step, nullptr});
    for (const auto& t : s.sample(logits, rows)) {
      ASSERT_LT(t.token, 4) << "step " << step;
      ASSERT_TRUE(std::isfinite(t.logprob));
      ++draws;
    }
  }
  EXPECT_EQ(draws, 64 * 16);
}

TEST(Sampler, GreedyTopKTopPAndLogprobs) {
  Sampler s(5, torch::kCPU);
  auto logits = torch::tensor({2.0f, 1.0f, 0.5f, 0.0f, -1.0f}).unsqueeze(0);
  const auto raw = logits.log_softmax(1);
  SamplingParams greedy;
  greedy.temperature = 0;
  auto g = s.sample(logits, {{&greedy, 1, 0, nullptr}});
  EXPECT_EQ(g[0].token, 0);
  EXPECT_FLOAT_EQ(g[0].logprob, 0.0f);
  EXPECT_NEAR(g[0].raw_logprob, raw[0][0].item<float>(), 1e-6);
  // top_k = 2 at temperature 1: only tokens 0 and 1, sampling logprob renormalised over them.
  SamplingParams k2;
  k2.top_k = 2;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    auto t = s.sample(logits, {{&k2, seed, 0, nullptr}})[0];
    ASSERT_LT(t.token, 2);
    const double z = std::log(std::exp(2.0) + std::exp(1.0));
    EXPECT_NEAR(t.logprob, (t.token == 0 ? 2.0 : 1.0) - z, 1e-5);
    EXPECT_NEAR(t.raw_logprob, raw[0][t.token].item<float>(), 1e-6);
  }
  // top_p = 0.5: p0 = 0.57 already reaches it, so only token 0 remains.
  SamplingParams p5;
  p5.top_p = 0.5;
  for (uint64_t seed = 0; seed < 20; ++seed)
    EXPECT_EQ(s.sample(logits, {{&p5, seed, 0, nullptr}})[0].token, 0);
  // min_p = 0.3: p1/p0 = e^-1 = 0.37 stays, p2/p0 = 0.22 goes.
  SamplingParams m3;
  m3.min_p = 0.3;
  for (uint64_t seed = 0; seed < 50; ++seed)
    EXPECT_LT(s.sample(logits, {{&m3, seed, 0, nullptr}})[0].token, 2);
}

TEST(Sampler, RepetitionPenaltyFollowsHuggingFace) {
  Sampler s(3, torch::kCPU);
  auto logits = torch::tensor({1.0f, 0.9f, -2.0f}).unsqueeze(0);
  SamplingParams p;
  p.repetition_penalty = 2.0;
  p.top_k = 1;  // the argmax of the penalised logits
  std::vector<int32_t> history = {0};
  // token 0: 1.0 / 2 = 0.5 < 0.9, so token 1 wins.
  EXPECT_EQ(s.sample(logits, {{&p, 3, 0, &history}})[0].token, 1);
}

}  // namespace
}  // namespace musacoder::engine
