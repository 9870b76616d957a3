// Flags shared by `musacoder generate` and `musacoder serve-model`: where the model runs and how the
// engine is sized. Help text shows the live defaults of ModelOptions / EngineOptions.
#pragma once

#include <CLI/CLI.hpp>

#include "engine/engine.h"
#include "model/options.h"

namespace musacoder::tool {

struct EngineFlags {
  std::string model_dir;
  model::ModelOptions model;
  engine::EngineOptions engine;
  bool no_cuda_graphs = false;
};

inline void add_engine_flags(CLI::App* sub, EngineFlags& f) {
  sub->add_option("--model", f.model_dir, "Hugging Face checkpoint directory (config.json, weights, tokenizer.json)")
      ->required();
  sub->add_option("--device", f.model.device, "cpu, cuda, cuda:N")->capture_default_str();
  sub->add_option("--dtype", f.model.dtype, "auto (bf16 on CUDA, fp32 on CPU), bfloat16, float16, float32")
      ->capture_default_str();
  sub->add_option("--kv-cache-gb", f.engine.kv_cache_gb,
                  "KV cache size in GiB (0: --kv-cache-memory-fraction of free GPU memory; 1 GiB on CPU)")
      ->capture_default_str();
  sub->add_option("--kv-cache-memory-fraction", f.engine.kv_cache_memory_fraction,
                  "share of free GPU memory for the KV cache when --kv-cache-gb is 0")
      ->capture_default_str();
  sub->add_option("--block-size", f.engine.block_size, "tokens per KV block")->capture_default_str();
  sub->add_option("--max-model-len", f.engine.max_model_len, "prompt + generated tokens (0: the config's)")
      ->capture_default_str();
  sub->add_option("--max-num-seqs", f.engine.max_num_seqs, "sequences decoded together")->capture_default_str();
  sub->add_option("--max-num-batched-tokens", f.engine.max_num_batched_tokens,
                  "tokens per forward step (prefills are chunked to fit)")
      ->capture_default_str();
  sub->add_flag("--no-cuda-graphs", f.no_cuda_graphs, "run decode steps eagerly on CUDA");
}

inline Result<std::unique_ptr<engine::Engine>> load_engine(EngineFlags& f) {
  f.engine.cuda_graphs = !f.no_cuda_graphs;
  return engine::Engine::load(f.model_dir, f.model, f.engine);
}

}  // namespace musacoder::tool
