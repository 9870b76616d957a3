// Our gated delta rule CUDA kernels (model/delta_rule.h on CUDA tensors) against transformers' torch
// fallback (torch_fallback.py, run by this program) at one Gated DeltaNet layer of Qwen3.5-9B: batch 1,
// 4096 tokens, 16 q/k heads, 32 value heads, dk = dv = 128. Forward and forward+backward tokens/s, median
// of --iters after 2 warm-ups, side by side with the ratio.
//   build/perf/deltanet_kernels/deltanet_kernels_bench [--seq 4096] [--iters 10] [--trace-dir DIR]
// --trace-dir: one forward and one forward+backward of ours traced with the PyTorch profiler into
// DIR/deltanet_forward.json and DIR/deltanet_forward_backward.json (perf/common/trace_summary.py reads them).
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/delta_rule.h"
#include "process/subprocess.h"
#include "profile_trace.h"

namespace {

using musacoder::model::chunk_gated_delta_rule;

struct Shape {
  int64_t batch = 1, seq = 4096, k_heads = 16, v_heads = 32, dk = 128, dv = 128, iters = 10;
};

template <typename Fn>
double median_seconds(Fn fn, int64_t iters) {
  for (int i = 0; i < 2; ++i) fn();
  std::vector<double> times;
  for (int64_t i = 0; i < iters; ++i) {
    torch::cuda::synchronize();
    auto t0 = std::chrono::steady_clock::now();
    fn();
    torch::cuda::synchronize();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

std::vector<torch::Tensor> inputs(const Shape& s, bool grad) {
  torch::manual_seed(0);
  auto o = torch::TensorOptions().device(torch::kCUDA);
  std::vector<torch::Tensor> xs{torch::randn({s.batch, s.seq, s.k_heads, s.dk}, o),
                                torch::randn({s.batch, s.seq, s.k_heads, s.dk}, o),
                                torch::randn({s.batch, s.seq, s.v_heads, s.dv}, o),
                                -torch::rand({s.batch, s.seq, s.v_heads}, o) * 0.3,
                                torch::rand({s.batch, s.seq, s.v_heads}, o)};
  for (auto& x : xs) x.requires_grad_(grad);
  return xs;
}

}  // namespace

int main(int argc, char** argv) {
  Shape s;
  std::string trace_dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t v = std::atoll(argv[i + 1]);
    if (flag == "--trace-dir")
      trace_dir = argv[i + 1];
    else if (flag == "--seq")
      s.seq = v;
    else if (flag == "--batch") s.batch = v;
    else if (flag == "--iters") s.iters = v;
    else {
      std::fprintf(stderr, "unknown flag %s (--seq, --batch, --iters, --trace-dir)\n", flag.c_str());
      return 2;
    }
  }
  if (!torch::cuda::is_available() || !musacoder::model::delta_rule_cuda_kernels_built()) {
    std::fprintf(stderr, "needs a CUDA device and a build with the delta rule kernels\n");
    return 2;
  }
  auto fwd_in = inputs(s, false);
  double fwd = 0;
  {
    torch::NoGradGuard no_grad;
    fwd = median_seconds([&] { chunk_gated_delta_rule(fwd_in[0], fwd_in[1], fwd_in[2], fwd_in[3], fwd_in[4]); },
                         s.iters);
  }
  auto bwd_in = inputs(s, true);
  const double both = median_seconds([&] {
    auto r = chunk_gated_delta_rule(bwd_in[0], bwd_in[1], bwd_in[2], bwd_in[3], bwd_in[4]);
    r.out.sum().backward();
  }, s.iters);
  if (!trace_dir.empty()) {  // one forward and one forward+backward under the PyTorch profiler
    {
      torch::NoGradGuard no_grad;
      musacoder::perf::ProfileTrace trace(trace_dir + "/deltanet_forward.json", true);
      chunk_gated_delta_rule(fwd_in[0], fwd_in[1], fwd_in[2], fwd_in[3], fwd_in[4]);
      torch::cuda::synchronize();
    }
    musacoder::perf::ProfileTrace trace(trace_dir + "/deltanet_forward_backward.json", true);
    chunk_gated_delta_rule(bwd_in[0], bwd_in[1], bwd_in[2], bwd_in[3], bwd_in[4]).out.sum().backward();
    torch::cuda::synchronize();
  }

  musacoder::ProcessOptions o;
  o.argv = {"python3", std::string(MUSACODER_SOURCE_DIR) + "/perf/deltanet_kernels/torch_fallback.py",
            "--batch", std::to_string(s.batch), "--seq", std::to_string(s.seq), "--iters", std::to_string(s.iters)};
  o.deadline = std::chrono::seconds(1200);
  o.env_set["TRANSFORMERS_VERBOSITY"] = "error";
  auto r = musacoder::run_process(o);
  if (!r.ok() || !r->succeeded()) {
    std::fprintf(stderr, "torch_fallback.py failed: %s\n%s", r.ok() ? r->describe().c_str() : r.status().to_string().c_str(),
                 r.ok() ? r->stderr_text.c_str() : "");
    return 1;
  }
  const auto base = nlohmann::json::parse(r->stdout_text.substr(r->stdout_text.rfind('{')));
  const double tokens = static_cast<double>(s.batch * s.seq);
  const double base_fwd = base["forward_s"], base_both = base["forward_backward_s"];
  std::printf("gated delta rule, B=%ld T=%ld Hk=%ld Hv=%ld dk=%ld dv=%ld, %s\n", s.batch, s.seq, s.k_heads, s.v_heads,
              s.dk, s.dv, base["gpu"].get<std::string>().c_str());
  std::printf("%-18s %16s %16s %8s\n", "", "ours tok/s", "torch tok/s", "ratio");
  std::printf("%-18s %16.0f %16.0f %7.1fx\n", "forward", tokens / fwd, tokens / base_fwd, base_fwd / fwd);
  std::printf("%-18s %16.0f %16.0f %7.1fx\n", "forward+backward", tokens / both, tokens / base_both, base_both / both);
  std::printf("BENCH_JSON {\"forward_ratio\": %.3f, \"forward_backward_ratio\": %.3f, \"ours_forward_s\": %.6f, "
              "\"ours_forward_backward_s\": %.6f, \"torch_forward_s\": %.6f, \"torch_forward_backward_s\": %.6f}\n",
              base_fwd / fwd, base_both / both, fwd, both, base_fwd, base_both);
  return 0;
}
