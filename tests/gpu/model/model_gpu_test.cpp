// GPU parity and throughput on a random model of Qwen2.5-Coder-1.5B's shape (hidden 1536, 28 layers,
// 12 heads, 2 KV heads, intermediate 8960, vocab 151936, tied embeddings, rope theta 1e6), bf16 on CUDA:
// transformers builds it and its reference logits (hf_reference.py gpu), we load the checkpoint and compare
// within bf16 tolerance, then both forwards are timed on the same batch shape. Skips without a GPU.
#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <execinfo.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/cuda.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <tuple>

#include "core/files.h"
#include "model/checkpoint.h"
#include "model/decoder.h"
#include "model/delta_rule.h"
#include "model/swiglu.h"
#include "process/subprocess.h"

namespace musacoder::model {
namespace {

// A crash in CUDA code leaves no message: print where it happened. A jump to a null (or unmapped)
// function pointer leaves the program counter where backtrace() cannot unwind from, so the return
// address on top of the stack — the caller of the bad pointer — is printed too.
void print_backtrace(int sig, siginfo_t*, void* context) {
  const char msg[] = "\nmodel_gpu_tests: fatal signal, backtrace:\n";
  (void)!::write(2, msg, sizeof(msg) - 1);
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, n, 2);
  const auto* uc = static_cast<const ucontext_t*>(context);
  void* pc = reinterpret_cast<void*>(uc->uc_mcontext.gregs[REG_RIP]);
  void* caller = *reinterpret_cast<void* const*>(uc->uc_mcontext.gregs[REG_RSP]);
  const char at[] = "faulting pc, then the return address on top of the stack:\n";
  (void)!::write(2, at, sizeof(at) - 1);
  void* both[2] = {pc, caller};
  ::backtrace_symbols_fd(both, 2, 2);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
const bool kBacktraceInstalled = [] {
  struct sigaction sa {};
  sa.sa_sigaction = print_backtrace;
  sa.sa_flags = SA_SIGINFO;
  ::sigaction(SIGSEGV, &sa, nullptr);
  ::sigaction(SIGABRT, &sa, nullptr);
  // stdout is a file on the GPU machine: unbuffered, so a crash loses none of gtest's lines either,
  // and the exit handlers announce themselves (a crash after this line is in static destruction).
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::atexit([] { std::printf("GPU_RESULT step exit handlers of the test binary ran\n"); });
  return true;
}();

// Marks the end of all tests, before main() returns.
class AnnounceTearDown : public ::testing::Environment {
 public:
  void TearDown() override { std::printf("GPU_RESULT step all tests done, main() returning\n"); }
};
const auto* const kAnnounce = ::testing::AddGlobalTestEnvironment(new AnnounceTearDown);

// Why the GPU tests cannot run here (nullptr: they can).
const char* no_gpu() {
  if (!std::filesystem::exists("/dev/nvidiactl")) return "skipped: no NVIDIA device (/dev/nvidiactl missing)";
  if (!torch::cuda::is_available()) return "skipped: libtorch sees no CUDA device (CPU-only libtorch?)";
  return nullptr;
}

// Packed training attention with grouped-query heads on CUDA: grouped_sdpa matches the fp32 CPU math
// reference in bf16, and its backward keeps no (B, H, T, T) score matrix (the math fallback that enable_gqa
// with a mask gets would hold 2 * 9 * 4096^2 * 2 bytes = 604 MB for this one layer; the memory-efficient
// kernel needs a few MB).
TEST(ModelGpu, GroupedSdpaWithAPackedMaskUsesNoScoreMatrix) {
  if (const char* why = no_gpu()) GTEST_SKIP() << why;
  torch::manual_seed(0);
  const int64_t B = 2, H = 9, Hkv = 3, T = 4096, D = 64;
  auto opts = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
  torch::Tensor q = torch::randn({B, H, T, D}, opts).requires_grad_(true);
  torch::Tensor k = torch::randn({B, Hkv, T, D}, opts).requires_grad_(true);
  torch::Tensor v = torch::randn({B, Hkv, T, D}, opts).requires_grad_(true);
  torch::Tensor seq = (torch::arange(T, torch::kLong) / 1000).unsqueeze(0).expand({B, T}).contiguous();
  torch::Tensor mask = packed_causal_mask(seq.to(torch::kCUDA));
  const double scale = 1.0 / 8.0;
  torch::cuda::synchronize();
  const auto before = at::accelerator::getDeviceStats(0).allocated_bytes[0].current;
  at::accelerator::resetPeakStats(0);
  torch::Tensor out = grouped_sdpa(q, k, v, mask, false, scale);
  out.sum().backward();
  torch::cuda::synchronize();
  const auto peak = at::accelerator::getDeviceStats(0).allocated_bytes[0].peak - before;
  std::printf(
      "GPU_RESULT grouped_sdpa B=%ld H=%d Hkv=%d T=%ld: peak %.1f MB over the inputs (scores: %.1f MB)\n",
      static_cast<long>(B), static_cast<int>(H), static_cast<int>(Hkv), static_cast<long>(T), peak / 1e6,
      2.0 * B * H * T * T / 1e6);
  EXPECT_LT(peak, 300'000'000);  // the mask as an additive bias (fp32: 134 MB), inputs repeated to 9 heads, grads
  // fp32 on the CPU (math, enable_gqa) on the first 512 positions of one row: the packed mask cuts there too
  using torch::indexing::Slice;
  const int64_t n = 512;
  auto cpu = [&](const torch::Tensor& t) {
    return t.detach().index({Slice(0, 1), Slice(), Slice(0, n)}).cpu().to(torch::kFloat);
  };
  torch::Tensor ref = grouped_sdpa(cpu(q), cpu(k), cpu(v),
                                   packed_causal_mask(seq.index({Slice(0, 1), Slice(0, n)})), false, scale);
  const double err = (cpu(out) - ref).abs().max().item<double>();
  std::printf("GPU_RESULT grouped_sdpa bf16 vs fp32 CPU reference: max abs error %.4f\n", err);
  EXPECT_LT(err, 0.03);
}

// Packed sequences through varlen flash attention (packed_cu_seqlens) against the dense block-diagonal mask
// path (k/v repeated, the memory-efficient kernel) on the same bf16 inputs: output and the three input
// gradients agree to bf16 rounding, with runs crossing no row seam and one run filling a whole row.
// model/swiglu.h's fused kernels against torch::silu(gate) * up and autograd's backward of it, on CUDA, every
// dtype: the same roundings, so at most an ulp apart where the two exp implementations differ (counted).
TEST(ModelGpu, FusedSwigluEqualsTheOpsForwardAndBackward) {
  if (const char* why = no_gpu()) GTEST_SKIP() << why;
  if (!delta_rule_cuda_kernels_built()) GTEST_SKIP() << "skipped: built without MUSACODER_CUDA_KERNELS";
  for (const auto dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf}) {
    torch::manual_seed(4);
    auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
    const torch::Tensor g0 = torch::randn({4, 37, 300}, o) * 3, u0 = torch::randn({4, 37, 300}, o);
    const torch::Tensor dy = torch::randn({4, 37, 300}, o);
    torch::Tensor g1 = g0.clone().requires_grad_(true), u1 = u0.clone().requires_grad_(true);
    torch::Tensor g2 = g0.clone().requires_grad_(true), u2 = u0.clone().requires_grad_(true);
    const torch::Tensor ops = torch::silu(g1) * u1, fused = swiglu(g2, u2, /*fused=*/true);
    ops.backward(dy), fused.backward(dy);
    const double ulp = dtype == torch::kFloat ? 1e-6 : (dtype == torch::kBFloat16 ? 1.0 / 128 : 1.0 / 1024);
    for (const auto& [name, a, b] :
         {std::tuple{"out", fused, ops}, std::tuple{"d_gate", g2.grad(), g1.grad()},
          std::tuple{"d_up", u2.grad(), u1.grad()}}) {
      const torch::Tensor af = a.to(torch::kFloat), bf = b.to(torch::kFloat);
      const double err = (af - bf).abs().max().item<double>(), scale = bf.abs().max().item<double>();
      const double exact = (af == bf).to(torch::kDouble).mean().item<double>();
      EXPECT_LE(err, ulp * std::max(1.0, scale)) << name << " " << dtype;
      std::printf("GPU_RESULT swiglu %s %s max abs diff %.3g (max %.3g), %.4f%% bit-equal\n", name,
                  c10::toString(dtype), err, scale, 100 * exact);
    }
  }
}

TEST(ModelGpu, PackedVarlenFlashEqualsTheDenseMaskForwardAndBackward) {
  if (const char* why = no_gpu()) GTEST_SKIP() << why;
  torch::manual_seed(1);
  const int64_t B = 2, H = 9, Hkv = 3, T = 2048, D = 64;
  auto opts = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
  auto leaf = [&](int64_t heads) { return torch::randn({B, heads, T, D}, opts).requires_grad_(true); };
  torch::Tensor q = leaf(H), k = leaf(Hkv), v = leaf(Hkv), g = torch::randn({B, H, T, D}, opts);
  // Row 0: runs of 700, 1, 900, 447 tokens; row 1: one run of 2048 (the same id as row 0's last run).
  torch::Tensor seq = torch::cat({torch::full({700}, 0), torch::full({1}, 1), torch::full({900}, 2),
                                  torch::full({447}, 3), torch::full({T}, 3)})
                          .view({B, T})
                          .to(torch::kLong)
                          .to(torch::kCUDA);
  torch::Tensor cu = packed_cu_seqlens(seq);
  ASSERT_EQ(packed_attention_mask(seq, torch::kBFloat16).scalar_type(), torch::kInt);
  EXPECT_TRUE(torch::equal(cu.cpu(), torch::tensor({0, 700, 701, 1601, 2048, 4096}, torch::kInt)));
  auto run = [&](const torch::Tensor& mask) {
    for (auto* t : {&q, &k, &v}) t->mutable_grad() = torch::Tensor();
    torch::cuda::synchronize();
    const auto before = at::accelerator::getDeviceStats(0).allocated_bytes[0].current;
    at::accelerator::resetPeakStats(0);
    torch::Tensor out = grouped_sdpa(q, k, v, mask, false, 0.125);
    out.backward(g);
    torch::cuda::synchronize();
    const double peak =
        static_cast<double>(at::accelerator::getDeviceStats(0).allocated_bytes[0].peak - before);
    return std::tuple{out.detach().to(torch::kFloat), q.grad().to(torch::kFloat), k.grad().to(torch::kFloat),
                      v.grad().to(torch::kFloat), peak};
  };
  auto [o1, dq1, dk1, dv1, peak_varlen] = run(cu);
  auto [o2, dq2, dk2, dv2, peak_dense] = run(packed_causal_mask(seq));
  auto rel = [](const torch::Tensor& a, const torch::Tensor& b) {
    return ((a - b).abs().max() / b.abs().max()).item<double>();
  };
  std::printf(
      "GPU_RESULT packed varlen flash vs dense mask: out %.4f dq %.4f dk %.4f dv %.4f (max error / max); "
      "peak %.1f MB vs %.1f MB\n",
      rel(o1, o2), rel(dq1, dq2), rel(dk1, dk2), rel(dv1, dv2), peak_varlen / 1e6, peak_dense / 1e6);
  EXPECT_LT(rel(o1, o2), 0.02);
  EXPECT_LT(rel(dq1, dq2), 0.02);
  EXPECT_LT(rel(dk1, dk2), 0.02);
  EXPECT_LT(rel(dv1, dv2), 0.02);
  EXPECT_LT(peak_varlen, peak_dense);
}

const std::filesystem::path kScript =
    std::filesystem::path(MUSACODER_SOURCE_DIR) / "tests/integration/model/hf_reference.py";

TEST(ModelGpu, Qwen25Coder15BShapeBf16ParityAndTokensPerSecond) {
  if (const char* why = no_gpu()) GTEST_SKIP() << why;
  auto dir = TempDir::create("mc-model-gpu");
  ASSERT_TRUE(dir.ok());
  ProcessOptions o;
  o.argv = {"python3", kScript.string(), "gpu", "--out", dir->path().string()};
  o.deadline = std::chrono::seconds(400);
  o.env_set = {{"TRANSFORMERS_VERBOSITY", "error"}, {"HF_HUB_OFFLINE", "1"}};
  auto r = run_process(o);
  ASSERT_TRUE(r.ok() && r->succeeded())
      << (r.ok() ? r->describe() + "\n" + r->stderr_text : r.status().to_string());
  std::printf("GPU_RESULT transformers %s", r->stdout_text.c_str());
  std::fflush(stdout);  // a crash below must not take the lines above with it

  std::printf("GPU_RESULT step transformers reference done; loading our model\n");
  std::fflush(stdout);
  if (std::getenv("MC_SDPA_NO_CUDNN")) {
    at::globalContext().setSDPUseCuDNN(false);
    std::printf("GPU_RESULT step cuDNN attention off for SDPA\n");
  }
  ModelOptions mo;
  mo.device = "cuda";
  mo.dtype = "bfloat16";
  auto t0 = std::chrono::steady_clock::now();
  auto model = load_pretrained(dir->path(), mo);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("GPU_RESULT step loaded in %.1f s; comparing logits\n", load_s);
  std::fflush(stdout);
  torch::NoGradGuard no_grad;
  auto ref = SafetensorsCheckpoint::open(dir->path() / "ref.safetensors");
  ASSERT_TRUE(ref.ok());
  for (int k = 0; ref->contains("ids_" + std::to_string(k)); ++k) {
    torch::Tensor ids = ref->tensor("ids_" + std::to_string(k)).value().to(torch::kCUDA);
    torch::Tensor want =
        ref->tensor("logits_" + std::to_string(k)).value().to(torch::kCUDA).to(torch::kFloat);
    torch::Tensor got = (*model)->forward({ids}).to(torch::kFloat);
    double max_abs = (got - want).abs().max().item<double>();
    double ref_max = want.abs().max().item<double>();
    double cosine =
        torch::nn::functional::cosine_similarity(got.flatten(), want.flatten(),
                                                 torch::nn::functional::CosineSimilarityFuncOptions().dim(0))
            .item<double>();
    double top1 = (got.argmax(-1) == want.argmax(-1)).to(torch::kFloat).mean().item<double>();
    std::printf("GPU_RESULT parity B=%ld T=%ld max_abs=%.4g ref_max_abs=%.4g cosine=%.6f top1_agree=%.4f\n",
                ids.size(0), ids.size(1), max_abs, ref_max, cosine, top1);
    std::fflush(stdout);
    // bf16 tolerance: different kernel choices move logits by a few bf16 ulps of the largest values.
    EXPECT_GE(cosine, 0.999);
    EXPECT_GE(top1, 0.98);
    EXPECT_LE(max_abs, 0.05 * ref_max + 0.05);
  }
  // Throughput on the shape hf_reference.py timed: batch 4 x 1024, median of 10 after 3 warm-ups.
  std::printf("GPU_RESULT step timing the forward on 4 x 1024\n");
  std::fflush(stdout);
  torch::Tensor ids =
      torch::randint(0, 151936, {4, 1024}, torch::TensorOptions().dtype(torch::kLong)).to(torch::kCUDA);
  std::vector<double> times;
  for (int it = 0; it < 13; ++it) {
    torch::cuda::synchronize();
    auto s = std::chrono::steady_clock::now();
    (*model)->forward({ids});
    torch::cuda::synchronize();
    if (it == 0) {
      std::printf("GPU_RESULT step first timed forward done\n");
      std::fflush(stdout);
    }
    if (it >= 3) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
  }
  std::printf("GPU_RESULT step all timed forwards done\n");
  std::fflush(stdout);
  std::sort(times.begin(), times.end());
  double med = times[times.size() / 2];
  std::printf(
      "GPU_RESULT musacoder {\"forward_tokens_per_s\": %.0f, \"median_s\": %.4f, \"batch\": 4, \"seq\": "
      "1024, "
      "\"load_s\": %.1f}\n",
      static_cast<double>(ids.numel()) / med, med, load_s);
  std::fflush(stdout);  // stdout is a file here: a crash in the teardown below must not lose the line
  // The teardown one object at a time, each announced: a crash names the object.
  ids = torch::Tensor();
  model = internal_error("released");
  std::printf("GPU_RESULT step model released\n");
  std::fflush(stdout);
  ref = internal_error("released");
  std::printf("GPU_RESULT step reference checkpoint released\n");
  std::fflush(stdout);
}

}  // namespace
}  // namespace musacoder::model
