// engine_throughput --model DIR --batch-sizes 1,16,64,256 --prompt-len 512 --new-tokens 512: for each batch
// size, B requests of random prompt ids (greedy, eos ignored) submitted at once; prints one JSON line per
// batch size with output tokens/s, the time to the last first token (prefill) and the per-step decode time.
// A warm-up round per batch size (16 new tokens) captures its CUDA graph first. --trace-dir DIR: after the
// timed run, one more run per batch size traces --trace-tokens decode steps (every request decoding) with the
// PyTorch profiler into DIR/engine_b<B>.json; perf/common/trace_summary.py --per <trace-tokens> reads it per
// step.
#include <ATen/Context.h>
#include <torch/cuda.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <tuple>

#include "engine/engine.h"
#include "profile_trace.h"

using namespace musacoder;
using Clock = std::chrono::steady_clock;

namespace {

struct Timing {
  double total_s = 0, prefill_s = 0;  // prefill: until every request has its first token
  int64_t tokens = 0;
};

// A trace of `steps` decode steps with every request decoding, taken on the calling thread (the profiler's
// CPU ops are that thread's; its GPU kernels are every thread's): the engine's callbacks say when the last
// request has its first token and when that request has `steps` more tokens.
struct DecodeTrace {
  std::string path;
  bool cuda = false;
  int64_t steps = 32;
  std::promise<void> all_decoding, enough_steps;
  int64_t request = -1;
  std::size_t start_tokens = 0;
  bool started = false, stopped = false;

  void on_update(int64_t b, int64_t firsts, int64_t batch, std::size_t tokens) {  // under the run's lock
    if (!started && firsts == batch) {
      request = b, start_tokens = tokens, started = true;
      all_decoding.set_value();
    } else if (b == request && !stopped && static_cast<int64_t>(tokens - start_tokens) >= steps) {
      stop();
    }
  }
  // Every request has finished (also one that ended early): nothing more to wait for.
  void on_all_finished() {
    if (!started) started = true, all_decoding.set_value();
    stop();
  }
  void stop() {
    if (!stopped) stopped = true, enough_steps.set_value();
  }
  void take() {
    all_decoding.get_future().wait();
    perf::ProfileTrace trace(path, cuda);
    enough_steps.get_future().wait();
  }
};

Timing run(engine::Engine& e, int64_t batch, int64_t prompt_len, int64_t new_tokens, uint64_t seed,
           DecodeTrace* trace = nullptr) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> id(100, static_cast<int32_t>(e.config().vocab_size) - 1);
  std::vector<std::promise<void>> done(static_cast<std::size_t>(batch));
  std::mutex mu;
  Clock::time_point last_first{};
  int64_t tokens = 0, firsts = 0, finished = 0;
  const auto t0 = Clock::now();
  for (int64_t b = 0; b < batch; ++b) {
    engine::Request r;
    for (int64_t t = 0; t < prompt_len; ++t) r.prompt_ids.push_back(id(rng));
    r.sampling.temperature = 0, r.sampling.max_new_tokens = new_tokens, r.sampling.ignore_eos = true;
    auto first = std::make_shared<bool>(true);
    e.submit(r, [&, b, first](const engine::RequestUpdate& u) {
      std::lock_guard lock(mu);
      if (*first && !u.deltas.empty())
        last_first = std::max(last_first, Clock::now()), *first = false, ++firsts;
      if (trace) trace->on_update(b, firsts, batch, u.output.samples[0].token_ids.size());
      if (u.finished) {
        tokens += static_cast<int64_t>(u.output.samples[0].token_ids.size());
        if (++finished == batch && trace) trace->on_all_finished();
        done[static_cast<std::size_t>(b)].set_value();
      }
    });
  }
  if (trace) trace->take();
  for (auto& d : done) d.get_future().wait();
  const auto t1 = Clock::now();
  return {std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(last_first - t0).count(), tokens};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"engine output tokens/s per batch size"};
  std::string dir, dtype = "auto", device = "cuda";
  std::vector<int64_t> batches = {1, 16, 64, 256};
  int64_t prompt_len = 512, new_tokens = 512;
  bool no_graphs = false, no_fused = false, no_fused_projections = false, no_decode_linear = false,
       no_pdl = false;
  std::string trace_dir;
  int64_t trace_tokens = 32;
  int decode_steps = 0;
  app.add_option("--model", dir)->required();
  app.add_option("--device", device)->capture_default_str();
  app.add_option("--dtype", dtype)->capture_default_str();
  app.add_option("--batch-sizes", batches)->delimiter(',');
  app.add_option("--prompt-len", prompt_len)->capture_default_str();
  app.add_option("--new-tokens", new_tokens)->capture_default_str();
  app.add_flag("--no-cuda-graphs", no_graphs);
  app.add_flag("--no-fused-ops", no_fused,
               "the modules' ops instead of the fused norm / SiLU-mul / RoPE kernels");
  app.add_flag("--no-fused-projections", no_fused_projections, "q/k/v and gate/up as separate matmuls");
  app.add_flag("--no-decode-linear", no_decode_linear,
               "small decode batches: cuBLAS after the norm / SiLU-mul kernels instead of decode_linear");
  app.add_flag("--no-pdl", no_pdl, "decode_linear kernels launched without programmatic dependent launch");
  app.add_option("--decode-steps", decode_steps,
                 "decode steps per host round trip (EngineOptions; 0: its default)")
      ->check(CLI::Range(0, 64));
  app.add_option("--trace-dir", trace_dir, "also trace a short run per batch size with the PyTorch profiler");
  app.add_option("--trace-tokens", trace_tokens, "new tokens of the traced run")
      ->check(CLI::Range(2, 100000));
  CLI11_PARSE(app, argc, argv);
  if (no_pdl) setenv("MUSACODER_NO_PDL", "1", 1);  // read once, at the first decode_linear launch
  engine::EngineOptions o;
  o.max_num_seqs = *std::max_element(batches.begin(), batches.end());
  o.max_num_batched_tokens = 8192;
  o.max_model_len = prompt_len + new_tokens;
  o.cuda_graphs = !no_graphs;
  o.fused_ops = !no_fused;
  o.fuse_projections = !no_fused_projections;
  o.decode_linear = !no_decode_linear;
  o.decode_steps = decode_steps;
  auto e = engine::Engine::load(dir, {device, dtype}, o);
  if (!e.ok()) {
    std::fprintf(stderr, "engine_throughput: %s\n", e.status().to_string().c_str());
    return 2;
  }
  for (int64_t b : batches) {
    run(**e, b, prompt_len, 16, 1);  // warm-up: the bucket's graph, allocator pools
    const auto before = (*e)->stats();
    const Timing t = run(**e, b, prompt_len, new_tokens, 2);
    const auto after = (*e)->stats();
    const double decode_steps = static_cast<double>(new_tokens - 1);
    nlohmann::json j = {{"engine", "musacoder"},
                        {"batch", b},
                        {"prompt_len", prompt_len},
                        {"new_tokens", new_tokens},
                        {"output_tokens", t.tokens},
                        {"seconds", t.total_s},
                        {"tokens_per_s", t.tokens / t.total_s},
                        {"prefill_s", t.prefill_s},
                        {"decode_step_s", (t.total_s - t.prefill_s) / decode_steps},
                        {"steps", after.steps - before.steps},
                        {"graph_replays", after.cuda_graph_replays - before.cuda_graph_replays},
                        {"multi_step_rounds", after.multi_step_rounds - before.multi_step_rounds},
                        {"preemptions", after.preemptions - before.preemptions}};
    // Where a step's wall time goes (engine.h, EngineStats): per-step milliseconds by phase.
    const double steps = std::max<double>(1.0, static_cast<double>(after.steps - before.steps));
    for (const auto& [name, a, z] : {std::tuple{"schedule", before.schedule_s, after.schedule_s},
                                     std::tuple{"forward", before.forward_s, after.forward_s},
                                     std::tuple{"sample", before.sample_s, after.sample_s},
                                     std::tuple{"append", before.append_s, after.append_s},
                                     std::tuple{"emit", before.emit_s, after.emit_s}})
      j[std::string("host_ms_per_step_") + name] = 1e3 * (z - a) / steps;
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
    if (!trace_dir.empty()) {
      DecodeTrace trace{
          trace_dir + "/engine_b" + std::to_string(b) + ".json", device != "cpu", trace_tokens, {}, {}};
      run(**e, b, prompt_len, 2 * trace_tokens + 64, 3, &trace);
    }
  }
  return 0;
}
