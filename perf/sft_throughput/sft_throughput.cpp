// SFT training throughput of our step (TrainingForward + chunked LM-head cross-entropy + fp32-master fused
// AdamW) on a randomly initialised model of a given shape (default Qwen2.5-Coder-1.5B), one GPU, bf16. Prints
// one JSON line per configuration: tokens/s, MFU (vs --peak-tflops), peak allocated memory. The
// PyTorch/transformers eager baseline is sft_throughput_reference.py; run_sft_throughput.sh runs both and
// prints them side by side. --trace FILE: two more steps under the PyTorch profiler after the timed ones
// (perf/common/trace_summary.py FILE --per 2 reads it per step).
#include <ATen/DeviceAccelerator.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "model/decoder.h"
#include "profile_trace.h"
#include "train/common/forward.h"
#include "train/common/lm_loss.h"
#include "train/common/metrics.h"
#include "train/common/optimizer.h"

using namespace musacoder;

namespace {

struct Flags {
  int64_t hidden = 1536, intermediate = 8960, layers = 28, heads = 12, kv_heads = 2, vocab = 151936;
  int64_t seq = 4096, batch = 1, steps = 10, warmup = 3;
  bool checkpointing = false, one_pass = false;
  std::string trace;
  double peak_tflops = 989.0;  // H100/H200 SXM dense bf16
};

model::ModelConfig shape(const Flags& f) {
  model::ModelConfig c;
  c.architecture = model::Architecture::kQwen2;
  c.vocab_size = f.vocab;
  c.hidden_size = f.hidden;
  c.intermediate_size = f.intermediate;
  c.num_hidden_layers = f.layers;
  c.num_attention_heads = f.heads;
  c.num_key_value_heads = f.kv_heads;
  c.head_dim = f.hidden / f.heads;
  c.max_position_embeddings = 32768;
  c.rope.theta = 1e6;
  c.attention_bias = true;
  c.tie_word_embeddings = true;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"SFT step throughput (ours)"};
  app.add_option("--hidden", f.hidden);
  app.add_option("--intermediate", f.intermediate);
  app.add_option("--layers", f.layers);
  app.add_option("--heads", f.heads);
  app.add_option("--kv-heads", f.kv_heads);
  app.add_option("--vocab", f.vocab);
  app.add_option("--seq", f.seq);
  app.add_option("--batch", f.batch);
  app.add_option("--steps", f.steps);
  app.add_flag("--gradient-checkpointing", f.checkpointing);
  app.add_option("--peak-tflops", f.peak_tflops);
  app.add_option("--trace", f.trace, "also trace two steps with the PyTorch profiler into this file");
  app.add_flag("--one-pass-adamw", f.one_pass,
               "AdamWOptions::one_pass_kernel (the one-kernel optimizer step)");
  CLI11_PARSE(app, argc, argv);
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "sft_throughput: needs a CUDA device\n");
    return 2;
  }
  torch::Device dev(torch::kCUDA, 0);
  model::ModelConfig c = shape(f);
  model::Decoder m(c);
  model::init_like_transformers(m, 0);  // so the loss starts near ln(vocab), as the baseline's does
  m->to(dev, torch::kBFloat16);
  m->train();
  std::vector<train::NamedParam> params;
  int64_t n_params = 0;
  for (auto& p : m->named_parameters()) {
    params.push_back({p.key(), p.value()});
    n_params += p.value().numel();
  }
  train::AdamWOptions ao{0.9, 0.95, 1e-8, 0.0, true};
  ao.one_pass_kernel = f.one_pass;
  train::AdamW opt(params, ao);
  train::TrainingForward fwd(c);
  const int64_t chunk = train::lm_loss_chunk_rows(c.vocab_size);
  torch::Tensor ids = torch::randint(0, c.vocab_size, {f.batch, f.seq}, torch::TensorOptions().device(dev).dtype(torch::kLong));
  torch::Tensor positions = torch::arange(f.batch * f.seq - 1, ids.options());  // every position but the last
  torch::Tensor targets = ids.reshape({-1}).narrow(0, 1, f.batch * f.seq - 1);
  auto step = [&] {
    torch::Tensor h = fwd.hidden(m, {ids, {}, {}}, f.checkpointing);
    h = h.reshape({-1, c.hidden_size}).index_select(0, positions);
    torch::Tensor loss = train::chunked_lm_cross_entropy(h, m->output_weight(), targets, chunk) /
                         static_cast<double>(targets.numel());
    loss.backward();
    opt.accumulate_grads();
    opt.clip_grad_norm(1.0);
    opt.step(1e-5);
    return loss;
  };
  for (int64_t i = 0; i < f.warmup; ++i) step();
  torch::cuda::synchronize();
  at::accelerator::resetPeakStats(0);
  const auto t0 = std::chrono::steady_clock::now();
  torch::Tensor loss;
  for (int64_t i = 0; i < f.steps; ++i) loss = step();
  torch::cuda::synchronize();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double tokens = static_cast<double>(f.batch * f.seq * f.steps);
  const double per_token = train::model_flops_per_token(n_params, c.num_hidden_layers, c.hidden_size,
                                                        static_cast<double>(f.seq) / 2);
  const double tps = tokens / secs;
  const double peak_gib =
      static_cast<double>(at::accelerator::getDeviceStats(0).allocated_bytes[0].peak) / (1u << 30);
  if (!f.trace.empty()) {
    perf::ProfileTrace trace(f.trace, true);
    for (int i = 0; i < 2; ++i) step();
    torch::cuda::synchronize();
  }
  std::printf(
      "{\"impl\": \"%s\", \"checkpointing\": %s, \"seq\": %lld, \"tokens_per_second\": %.1f, "
      "\"mfu\": %.4f, \"peak_memory_gib\": %.2f, \"loss\": %.4f, \"params\": %lld}\n",
      f.one_pass ? "musacoder_one_pass" : "musacoder", f.checkpointing ? "true" : "false",
      static_cast<long long>(f.seq), tps, tps * per_token / (f.peak_tflops * 1e12), peak_gib,
      loss.item<double>(), static_cast<long long>(n_params));
  return 0;
}
