// The model under evaluation, behind one call: a conversation in, one sampled answer out. Two kinds:
//   endpoint  any OpenAI-compatible server (/v1/chat/completions): API models, vLLM, SGLang, our own
//             `musacoder serve-model` (engine::RemoteEngine: retries on connection errors, 429, 5xx)
//   engine    the built-in engine on a Hugging Face checkpoint; the conversation is rendered with the
//             checkpoint's chat template (Qwen3.5 thinking on or off)
// A failure to get an answer (HTTP errors after retries, a body that is not an OpenAI response, a
// request the engine rejects) comes back as a non-ok `status`: the harness counts it as an
// infrastructure failure, never as a wrong answer. An empty answer is an answer.
//
// Thread-safety: complete() may be called from many threads at once (the engine batches them).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "model/options.h"
#include "prompts/prompts.h"

namespace musacoder::kernelbench {

struct Sampling {
  double temperature = 0.7;      // the paper's protocol
  double top_p = 0.95;
  int64_t max_new_tokens = 4096;
  std::optional<uint64_t> seed;  // per request; set by the harness from (run seed, task, sample, turn)
};

struct Completion {
  Status status;              // not ok: no answer (infrastructure)
  std::string text;
  std::string finish_reason;  // "stop", "length", ...
  int64_t tokens = 0;         // generated tokens, where known
};

class ModelClient {
 public:
  virtual ~ModelClient() = default;
  virtual Completion complete(const std::vector<prompts::Message>& conversation, const Sampling& sampling) = 0;
  virtual std::string describe() const = 0;  // for reports: "endpoint http://..:8000 model=NAME"
};

std::unique_ptr<ModelClient> make_endpoint_client(const engine::RemoteOptions& options);

struct EngineClientOptions {
  std::filesystem::path model_dir;
  model::ModelOptions model;
  engine::EngineOptions engine;
  bool enable_thinking = true;  // Qwen3.5 templates: open a <think> block
};
Result<std::unique_ptr<ModelClient>> make_engine_client(const EngineClientOptions& options);

}  // namespace musacoder::kernelbench
