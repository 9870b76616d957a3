// Training core on libtorch: the chunked LM-head cross-entropy against the plain (T, V) computation, the fused
// AdamW against its formula, device-side clipping, ZeRO-1 owner assignment.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cstdio>

#include "train/common/forward.h"
#include "train/common/lm_loss.h"
#include "train/common/optimizer.h"
#include "train/common/parallel.h"

namespace musacoder::train {
namespace {

TEST(ChunkedLmLoss, EqualsPlainCrossEntropyAndItsGradients) {
  torch::manual_seed(0);
  const int64_t N = 37, C = 16, V = 53;
  torch::Tensor h = torch::randn({N, C}, torch::kDouble).to(torch::kFloat).requires_grad_(true);
  torch::Tensor w = (torch::randn({V, C}) * 0.5).requires_grad_(true);
  torch::Tensor t = torch::randint(0, V, {N}, torch::kLong);
  for (int64_t chunk : {1, 8, 37, 100}) {
    torch::Tensor ours = chunked_lm_cross_entropy(h, w, t, chunk);
    auto [gh, gw] = [&] {
      auto g = torch::autograd::grad({ours}, {h, w});
      return std::make_pair(g[0], g[1]);
    }();
    torch::Tensor plain = torch::nn::functional::cross_entropy(
        h.matmul(w.t()), t, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    auto g = torch::autograd::grad({plain}, {h, w});
    EXPECT_NEAR(ours.item<double>(), plain.item<double>(), 1e-4) << "chunk " << chunk;
    EXPECT_LE((gh - g[0]).abs().max().item<double>(), 1e-5) << "chunk " << chunk;
    EXPECT_LE((gw - g[1]).abs().max().item<double>(), 1e-5) << "chunk " << chunk;
  }
  EXPECT_EQ(lm_loss_chunk_rows(248320), 1081);  // 1 GiB of fp32 logits at Qwen3.5's vocabulary
}

// On CUDA (the LM-loss kernels: row lse and softmax gradient in one pass each over the bf16 logits; cuBLAS
// bf16 products per chunk, summed in fp32) the loss and both gradients against the fp32 computation of the
// same bf16 values. Runs where libtorch sees a CUDA device (the GPU machine), else skips.
TEST(ChunkedLmLoss, Bf16OnCudaEqualsTheFp32LossAndGradients) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "skipped: libtorch sees no CUDA device";
  torch::manual_seed(2);
  const int64_t N = 300, C = 64, V = 1000;
  torch::Tensor h32 = torch::randn({N, C}).to(torch::kBFloat16).to(torch::kFloat);
  torch::Tensor w32 = (torch::randn({V, C}) * 0.3).to(torch::kBFloat16).to(torch::kFloat);
  torch::Tensor t = torch::randint(0, V, {N}, torch::kLong);
  torch::Tensor h = h32.to(torch::kCUDA, torch::kBFloat16).requires_grad_(true);
  torch::Tensor w = w32.to(torch::kCUDA, torch::kBFloat16).requires_grad_(true);
  torch::Tensor loss = chunked_lm_cross_entropy(h, w, t.cuda(), 64);
  (loss * 0.5).backward();  // an incoming gradient other than 1 reaches the kernel's scale
  torch::Tensor hr = h32.clone().requires_grad_(true), wr = w32.clone().requires_grad_(true);
  torch::Tensor ref = torch::nn::functional::cross_entropy(
      hr.matmul(wr.t()), t, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  (ref * 0.5).backward();
  // the logits are rounded to bf16 by the LM-head matmul: ~2^-8 of each, on a sum of 300 rows
  EXPECT_NEAR(loss.item<double>(), ref.item<double>(), 2e-3 * std::abs(ref.item<double>()));
  auto rel = [](const torch::Tensor& got, const torch::Tensor& want) {
    return (got.cpu().to(torch::kFloat) - want).abs().max().item<double>() / want.abs().max().item<double>();
  };
  const double dw = rel(w.grad(), wr.grad()), dh = rel(h.grad(), hr.grad());
  EXPECT_LE(dw, 0.02);
  EXPECT_LE(dh, 0.02);
  std::printf("GPU_RESULT lm_loss bf16 loss %.6g vs %.6g, dW rel err %.3g, dh rel err %.3g\n",
              loss.item<double>(), ref.item<double>(), dw, dh);
}

TEST(ChunkedLmLoss, Bf16HiddenKeepsFloat32LossAndWeightGradient) {
  torch::manual_seed(1);
  torch::Tensor h = torch::randn({9, 8}).to(torch::kBFloat16).requires_grad_(true);
  torch::Tensor w = torch::randn({11, 8}).to(torch::kBFloat16).requires_grad_(true);
  torch::Tensor t = torch::randint(0, 11, {9}, torch::kLong);
  torch::Tensor loss = chunked_lm_cross_entropy(h, w, t, 4);
  EXPECT_EQ(loss.scalar_type(), torch::kFloat);
  loss.backward();
  EXPECT_EQ(w.grad().scalar_type(), torch::kBFloat16);
  torch::Tensor ref = torch::nn::functional::cross_entropy(
      h.to(torch::kFloat).matmul(w.to(torch::kFloat).t()), t,
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  EXPECT_NEAR(loss.item<double>(), ref.item<double>(), 0.05 * std::abs(ref.item<double>()));
}

// A two-layer decoder config small enough for gradient comparisons.
model::ModelConfig tiny_config(model::Architecture architecture) {
  model::ModelConfig c;
  c.architecture = architecture;
  c.vocab_size = 40;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 4;
  c.qk_norm = architecture == model::Architecture::kQwen3;
  c.max_position_embeddings = 64;
  return c;
}

struct LossAndGrads {
  double loss = 0;
  std::vector<torch::Tensor> grads;  // per parameter; undefined where backward produced none
};

// One forward and backward of sum(h · g(h)) with g fixed (`weight` of the detached hidden states).
LossAndGrads hidden_loss_and_grads(model::Decoder& m, const TrainingForward& fwd,
                                   const model::ForwardInput& in, bool checkpoint,
                                   torch::Tensor (*weight)(const torch::Tensor&)) {
  m->zero_grad();
  torch::Tensor h = fwd.hidden(m, in, checkpoint);
  torch::Tensor loss = (h * weight(h.detach())).sum();
  loss.backward();
  LossAndGrads out{loss.item<double>(), {}};
  for (const auto& p : m->parameters()) out.grads.push_back(p.grad().defined() ? p.grad().clone() : p.grad());
  return out;
}

// Checkpointed layers give the plain forward's loss and gradients, with a packed mask and without one (plain
// causal attention, where the layer's mask input is undefined).
TEST(TrainingForward, CheckpointingKeepsLossAndGradientsWithAndWithoutAMask) {
  const model::ModelConfig c = tiny_config(model::Architecture::kQwen2);
  torch::manual_seed(3);
  model::Decoder m(c);
  m->to(torch::kDouble);
  TrainingForward fwd(c);
  torch::Tensor ids = torch::randint(0, c.vocab_size, {2, 9}, torch::kLong);
  torch::Tensor seq = torch::cat({torch::zeros({2, 4}, torch::kLong), torch::ones({2, 5}, torch::kLong)}, 1);
  for (bool packed : {false, true}) {
    const model::ForwardInput in{ids, {}, packed ? seq : torch::Tensor()};
    const LossAndGrads plain = hidden_loss_and_grads(m, fwd, in, false, torch::cos);
    const LossAndGrads ckpt = hidden_loss_and_grads(m, fwd, in, true, torch::cos);
    EXPECT_NEAR(plain.loss, ckpt.loss, 1e-9) << "packed " << packed;
    ASSERT_EQ(plain.grads.size(), ckpt.grads.size());
    for (std::size_t i = 0; i < plain.grads.size(); ++i) {
      ASSERT_EQ(plain.grads[i].defined(), ckpt.grads[i].defined())
          << "parameter " << i << " packed " << packed;
      if (!plain.grads[i].defined()) continue;  // the LM head: not part of the hidden states
      EXPECT_LE((plain.grads[i] - ckpt.grads[i]).abs().max().item<double>(), 1e-9) << "parameter " << i;
    }
  }
}

// at::rms_norm (the fused CUDA kernel the trainers switch to on CUDA) equals the module's ops: loss and every
// gradient to float32 rounding, with and without checkpointing (on the CPU, where the switch is set by hand).
TEST(TrainingForward, FusedNormsGiveTheModuleOpsLossAndGradients) {
  const model::ModelConfig c = tiny_config(model::Architecture::kQwen3);
  torch::manual_seed(4);
  model::Decoder m(c);  // float32: the module's ops normalise in float32 whatever the input's dtype
  {
    torch::NoGradGuard no_grad;
    for (auto& p : m->named_parameters())
      if (p.key().find("norm") != std::string::npos) p.value().uniform_(0.5, 1.5);
  }
  TrainingForward fwd(c);
  const model::ForwardInput in{torch::randint(0, c.vocab_size, {2, 7}, torch::kLong), {}, {}};
  for (bool checkpoint : {false, true}) {
    use_fused_ops(m, false);
    const LossAndGrads ops = hidden_loss_and_grads(m, fwd, in, checkpoint, torch::sin);
    use_fused_ops(m, true);
    const LossAndGrads fused = hidden_loss_and_grads(m, fwd, in, checkpoint, torch::sin);
    EXPECT_NEAR(ops.loss, fused.loss, 1e-5 * std::abs(ops.loss)) << "checkpoint " << checkpoint;
    for (std::size_t i = 0; i < ops.grads.size(); ++i) {
      if (!ops.grads[i].defined()) continue;
      const double scale = ops.grads[i].abs().max().item<double>();
      EXPECT_LE((ops.grads[i] - fused.grads[i]).abs().max().item<double>(), 1e-5 * scale + 1e-6)
          << "parameter " << i;
    }
  }
  int fused_norms = 0;
  for (const auto& mod : m->modules(false))
    if (auto* n = dynamic_cast<model::RMSNormImpl*>(mod.get())) fused_norms += n->fused ? 1 : 0;
  EXPECT_EQ(fused_norms, 2 * 2 + 2 * 2 + 1);  // input/post-attention and q/k norms per layer, the final norm
}

TEST(AdamW, FusedKernelEqualsTheFormulaWithDecayOnMatricesOnly) {
  torch::manual_seed(2);
  auto make = [] {
    return std::vector<NamedParam>{{"w", torch::randn({4, 3}).requires_grad_(true)},
                                   {"b", torch::randn({3}).requires_grad_(true)}};
  };
  torch::manual_seed(3);
  auto p1 = make();
  torch::manual_seed(3);
  auto p2 = make();
  AdamWOptions o;
  o.weight_decay = 0.1;
  AdamW fused(p1, o);
  o.fused = false;
  AdamW plain(p2, o);
  for (int step = 0; step < 3; ++step) {
    for (auto* ps : {&p1, &p2}) {
      torch::manual_seed(10 + step);
      for (auto& p : *ps) p.param.mutable_grad() = torch::randn_like(p.param);
    }
    fused.step(1e-2);
    plain.step(1e-2);
  }
  for (std::size_t i = 0; i < p1.size(); ++i) {
    EXPECT_LE((p1[i].param - p2[i].param).abs().max().item<double>(), 1e-6) << p1[i].name;
  }
  auto state = fused.state();
  EXPECT_EQ(state.size(), 6u);  // exp_avg, exp_avg_sq, step per fp32 parameter (no master copy)
  EXPECT_EQ(state[2].second.item<double>(), 3.0);  // advanced before each fused call (the kernel does not)
}

TEST(AdamW, ClipsOnTheDeviceAndKeepsFp32MastersForBf16Params) {
  std::vector<NamedParam> p = {{"w", torch::ones({2, 2}).to(torch::kBFloat16).requires_grad_(true)}};
  AdamWOptions reference;
  reference.fused = false;  // scales grads() in place (the fused update takes the factor as its grad_scale)
  AdamW opt(p, reference);
  p[0].param.mutable_grad() = torch::full({2, 2}, 3.0).to(torch::kBFloat16);
  opt.accumulate_grads();
  p[0].param.mutable_grad() = torch::full({2, 2}, 1.0).to(torch::kBFloat16);
  opt.accumulate_grads();  // fp32 sum of two micro-batches: 4 each
  EXPECT_FALSE(p[0].param.grad().defined());
  torch::Tensor norm = opt.clip_grad_norm(1.0);  // ‖(4,4,4,4)‖ = 8 → scaled by 1/8
  EXPECT_NEAR(norm.item<double>(), 8.0, 1e-6);
  EXPECT_NEAR(opt.grads()[0].norm().item<double>(), 1.0, 1e-5);
  EXPECT_EQ(opt.grads()[0].scalar_type(), torch::kFloat);
  opt.step(0.5);
  EXPECT_EQ(opt.state().size(), 4u);  // + the fp32 master
  EXPECT_NEAR(p[0].param[0][0].item<double>(), 0.5, 1e-2);  // first Adam step moves by lr
}

// Clipping in the fused update (the factor as _fused_adamw_'s grad_scale) moves the parameters as clipping
// the gradients first and updating without one does (the reference path), step after step; a step without
// clipping after a clipped one uses no stale factor.
TEST(AdamW, FusedClippingEqualsClippingTheGradientsFirst) {
  auto params = [] {
    torch::manual_seed(3);
    return std::vector<NamedParam>{{"w", torch::randn({4, 3}).requires_grad_(true)},
                                   {"b", torch::randn({3}).to(torch::kBFloat16).requires_grad_(true)}};
  };
  std::vector<NamedParam> a = params(), b = params();
  AdamWOptions fused, plain;
  fused.weight_decay = plain.weight_decay = 0.1;
  plain.fused = false;
  AdamW fa(a, fused), pb(b, plain);
  for (int step = 0; step < 3; ++step) {
    torch::manual_seed(10 + step);
    const torch::Tensor gw = torch::randn({4, 3}) * 5, gb = torch::randn({3}) * 5;
    for (auto* ps : {&a, &b}) {
      (*ps)[0].param.mutable_grad() = gw.clone();
      (*ps)[1].param.mutable_grad() = gb.to(torch::kBFloat16);
    }
    fa.accumulate_grads(), pb.accumulate_grads();
    const double max_norm = step == 2 ? 0.0 : 1.0;  // the last step unclipped
    EXPECT_NEAR(fa.clip_grad_norm(max_norm).item<double>(), pb.clip_grad_norm(max_norm).item<double>(), 1e-5);
    fa.step(0.05), pb.step(0.05);
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_LE((a[i].param.to(torch::kFloat) - b[i].param.to(torch::kFloat)).abs().max().item<double>(),
                1e-5)
          << a[i].name << " after step " << step;
  }
}

// The fp32 buffer is overwritten by the first backward after a step (not zeroed and added to), and reads as
// zeros when no backward reached a parameter since the step.
TEST(AdamW, Bf16GradientBuffersStartFreshAfterEachStep) {
  std::vector<NamedParam> p = {{"a", torch::ones({3}).to(torch::kBFloat16).requires_grad_(true)},
                               {"b", torch::ones({2}).to(torch::kBFloat16).requires_grad_(true)}};
  AdamW opt(p, {});
  EXPECT_EQ(opt.grads()[1].abs().sum().item<double>(), 0.0);  // never accumulated: zeros
  p[0].param.mutable_grad() = torch::full({3}, 5.0).to(torch::kBFloat16);
  p[1].param.mutable_grad() = torch::full({2}, 7.0).to(torch::kBFloat16);
  opt.accumulate_grads();
  opt.step(0.1);
  p[0].param.mutable_grad() = torch::full({3}, 2.0).to(torch::kBFloat16);
  opt.accumulate_grads();  // only "a" gets a gradient this step
  p[0].param.mutable_grad() = torch::full({3}, 0.5).to(torch::kBFloat16);
  opt.accumulate_grads();
  auto g = opt.grads();
  EXPECT_TRUE(torch::equal(g[0], torch::full({3}, 2.5)))
      << g[0];                                                 // 2 + 0.5, nothing of the 5 before the step
  EXPECT_TRUE(torch::equal(g[1], torch::zeros({2}))) << g[1];  // not the 7 before the step
  opt.zero_grad();
  p[1].param.mutable_grad() = torch::full({2}, 1.0).to(torch::kBFloat16);
  opt.accumulate_grads();
  EXPECT_TRUE(torch::equal(opt.grads()[1], torch::ones({2})));
  EXPECT_TRUE(torch::equal(opt.grads()[0], torch::zeros({3})));
}

// The one-pass kernel (AdamWOptions::one_pass_kernel, CUDA) against the torch path on the same bf16
// parameters and gradients: single-backward steps (the kernel reads the bf16 gradient as it is), a step of
// two backwards (their float32 sum), clipped and unclipped, decay on the matrix only. Masters agree to
// float32 rounding and the parameters to one bf16 rounding step; the buffers of a pending gradient behave as
// the torch path's.
TEST(AdamW, OnePassKernelEqualsTheTorchPath) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "skipped: libtorch sees no CUDA device";
  auto params = [] {
    torch::manual_seed(5);
    auto o = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
    return std::vector<NamedParam>{{"w", (torch::randn({300, 70}) * 0.05).to(o).requires_grad_(true)},
                                   {"b", (torch::randn({4097}) * 0.05).to(o).requires_grad_(true)}};
  };
  std::vector<NamedParam> a = params(), b = params();
  AdamWOptions kernel, torch_path;
  kernel.weight_decay = torch_path.weight_decay = 0.1;
  kernel.one_pass_kernel = true;
  AdamW ka(a, kernel), tb(b, torch_path);
  double worst_master = 0, worst_param = 0;
  for (int step = 0; step < 4; ++step) {
    const int backwards = step == 2 ? 2 : 1;
    for (int k = 0; k < backwards; ++k) {
      torch::manual_seed(20 + 10 * step + k);
      const auto gw = torch::randn({300, 70}) * 0.3, gb = torch::randn({4097}) * 0.3;
      for (auto* ps : {&a, &b}) {
        (*ps)[0].param.mutable_grad() = gw.to((*ps)[0].param.options());
        (*ps)[1].param.mutable_grad() = gb.to((*ps)[1].param.options());
      }
      ka.accumulate_grads(), tb.accumulate_grads();
    }
    const double max_norm = step == 1 ? 0.0 : 1.0;
    EXPECT_NEAR(ka.clip_grad_norm(max_norm).item<double>(), tb.clip_grad_norm(max_norm).item<double>(), 1e-4)
        << "step " << step;
    ka.step(1e-2), tb.step(1e-2);
    const auto sa = ka.state(), sb = tb.state();
    ASSERT_EQ(sa.size(), sb.size());
    for (std::size_t i = 0; i < sa.size(); ++i)
      worst_master = std::max(worst_master, (sa[i].second - sb[i].second).abs().max().item<double>());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const auto pa = a[i].param.to(torch::kFloat), pb = b[i].param.to(torch::kFloat);
      worst_param = std::max(worst_param, ((pa - pb).abs() / pb.abs().clamp_min(1e-3)).max().item<double>());
    }
  }
  std::printf(
      "GPU_RESULT one-pass AdamW vs torch path, 4 steps: max |state diff| %.3g, max param diff %.3g "
      "(relative)\n",
      worst_master, worst_param);
  EXPECT_LE(worst_master, 1e-5);      // masters, moments and step counters
  EXPECT_LE(worst_param, 1.0 / 128);  // at most one bf16 rounding step apart
}

TEST(Zero1, OwnersBalanceElementCounts) {
  // Largest first, each to the lighter rank: 100 → r0; 60 → r1; 50 → r1 (60 < 100: 110); 40 → r0 (140); 10 → r1.
  auto owner = DataParallel::assign_owners({50, 100, 10, 60, 40}, 2);
  EXPECT_EQ(owner, (std::vector<int>{1, 0, 1, 1, 0}));
  EXPECT_EQ(DataParallel::assign_owners({5, 6}, 1), (std::vector<int>{0, 0}));
}

}  // namespace
}  // namespace musacoder::train
