// The generation engine: continuous batching over a decoder with a paged KV cache, prefix sharing for the
// n samples of one prompt, batched sampling with per-request seeds, and per-token logprobs.
//
//   auto engine = Engine::load("ckpt/", {.device = "cuda"}, {});          // or Engine::create(decoder, ...)
//   engine->submit(request, [](const RequestUpdate& u) { ... });          // streaming, from the engine thread
//   std::vector<RequestOutput> outs = engine->generate(requests);         // blocking batch
//
// One engine thread owns the model while the engine runs: every step it admits queued requests (KV budget
// permitting), runs one forward over the batch's new tokens (decodes + chunks of prefills), samples, checks
// stops and calls callbacks. Requests join and leave between steps (continuous batching).
//
// Logprobs: every sampled token carries two numbers, named after the distribution they are taken under:
//   raw_logprobs  log_softmax of the model's logits (no temperature, penalty or truncation) — the policy's
//                 log pi(token | context) that RL needs;
//   logprobs      the log-probability under the distribution the token was actually drawn from (after
//                 repetition penalty, temperature, top-k, top-p, min-p); 0 for greedy decoding.
//
// Weight updates (colocated trainer): the engine reads the Decoder's parameters in place, so an in-place
// optimizer step is seen without a copy. update_weights(fn) is the fence that keeps any one request on one
// set of weights: it stops admitting, waits until every in-flight request has finished (drain), runs fn on
// the engine thread with the model idle, bumps weight_version(), and resumes. Every RequestOutput carries the
// weight_version it was generated under. Update parameters in place (tensor.copy_(), optimizer steps);
// when fn reallocates one, the engine notices (parameter addresses are compared) and drops its captured
// CUDA graphs, which hold those addresses.
//
// Thread-safety: submit, generate, cancel, update_weights, stats and weight_version may be called from any
// thread. Callbacks run on the engine thread; they must not block and may only call cancel().
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/config.h"
#include "model/options.h"
#include "tokenizer/tokenizer.h"

namespace musacoder::model {
class Decoder;  // model/decoder.h (libtorch); this header stays free of libtorch for the HTTP side
}

namespace musacoder::engine {

// ---- Requests --------------------------------------------------------------------------------------------

struct SamplingParams {
  // Processing order: repetition penalty, temperature, top-k, top-p, min-p; then one draw.
  double temperature = 1.0;         // 0: greedy (argmax of the raw logits)
  double top_p = 1.0;               // (0, 1]: keep the smallest set of tokens whose mass reaches top_p
  int64_t top_k = 0;                // 0: off; else keep the k most likely tokens
  double min_p = 0.0;               // [0, 1): drop tokens with p < min_p * p_max
  double repetition_penalty = 1.0;  // > 0; 1 off; Hugging Face's rule over prompt and generated tokens
  // Sample i of a request draws from a counter-based generator keyed by (seed, i, token index): the same
  // request gives the same tokens whatever else is in the batch. nullopt: a random seed.
  std::optional<uint64_t> seed;
  int64_t max_new_tokens = 256;        // >= 0; clipped to the context left after the prompt
  std::vector<int32_t> stop_token_ids;  // finish (reason "stop") after any of these; kept in token_ids
  std::vector<std::string> stop;        // finish when the text contains one; the text ends before it
  bool ignore_eos = false;              // true: the model's eos ids do not stop generation
  int n = 1;                            // samples of this prompt (they share its prefill)
  int top_logprobs = 0;                 // >0: also return the top-k tokens of the raw distribution per step
};

struct Request {
  std::vector<int32_t> prompt_ids;  // the prompt; when empty, `prompt` is encoded with the engine's tokenizer
  std::string prompt;
  SamplingParams sampling;
  std::string tag;  // free text carried into the output (e.g. the caller's id)
};

enum class FinishReason { kNone, kStop, kLength, kCancelled };
const char* finish_reason_name(FinishReason r);  // "", "stop", "length", "cancelled"

struct TopLogprob {
  int32_t token_id = 0;
  float logprob = 0;  // raw distribution
};

struct Sample {
  int index = 0;
  std::vector<int32_t> token_ids;  // generated tokens (the stop token included when one ended it)
  std::string text;                // their text without a matched stop string (empty without a tokenizer)
  std::vector<float> logprobs;      // per token: under the sampling distribution (see the header comment)
  std::vector<float> raw_logprobs;  // per token: under the raw model distribution
  std::vector<std::vector<TopLogprob>> top_logprobs;  // per token when SamplingParams::top_logprobs > 0
  FinishReason finish_reason = FinishReason::kNone;
  std::string stop_string;  // the stop string that matched, if any
};

struct RequestOutput {
  uint64_t request_id = 0;
  std::string tag;
  Status status;  // not ok: the request was rejected (then samples is empty)
  int64_t prompt_tokens = 0;
  std::vector<Sample> samples;
  uint64_t weight_version = 0;  // engine weight version the request ran under
  bool finished = false;
};

// What changed in one step for one request. `output` is the request's state so far (owned by the engine,
// valid during the callback only).
struct SampleDelta {
  int index = 0;
  std::size_t first_token = 0;  // new tokens are output.samples[index].token_ids[first_token..]
  std::string text;             // new text (stop strings are held back until they cannot match)
  bool finished = false;
};
struct RequestUpdate {
  const RequestOutput& output;
  std::vector<SampleDelta> deltas;
  bool finished = false;  // the last update of the request
};
using Callback = std::function<void(const RequestUpdate&)>;

// ---- Options ---------------------------------------------------------------------------------------------

struct EngineOptions {
  // -- memory
  int64_t block_size = 16;  // tokens per KV block
  // KV cache size: kv_cache_gb > 0 takes that many GiB; else on CUDA kv_cache_memory_fraction of the free
  // device memory after the weights, and on CPU 1 GiB. Requests that do not fit now wait (never OOM).
  double kv_cache_gb = 0;
  double kv_cache_memory_fraction = 0.85;
  int64_t max_model_len = 0;  // prompt + generated tokens; 0: the config's max_position_embeddings
  // -- scheduling
  int64_t max_num_seqs = 256;             // running sequences at once
  int64_t max_num_batched_tokens = 2048;  // tokens per forward (decodes first; prefills chunked to fit)
  int max_samples_per_request = 256;      // largest n accepted
  // -- speed (CUDA only)
  bool cuda_graphs = true;  // decode steps replayed from graphs captured per batch-size bucket
  std::vector<int64_t> cuda_graph_batch_sizes = {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256};
  // CUDA: fused RMSNorm, SiLU·mul and RoPE kernels (fused_ops_cuda.h); false: the modules' ops.
  bool fused_ops = true;
  // Every device: each layer's q/k/v and gate/up projections as one matmul each (fused_linear.h; the
  // projections' parameters become views of the fused tensors).
  bool fuse_projections = true;
  // CUDA, with fused_ops: a decode batch of at most 4 rows runs each projection together with the norm or
  // SiLU·mul before it as one matrix-vector kernel (decode_linear_cuda.h; three kernels a layer fewer).
  bool decode_linear = true;
  bool cuda_decode_kernel = true;  // our paged decode kernels (CUDA; CPU float32); false: SDPA over gathered KV
  // Decode steps per host round trip: when every running sequence decodes and none waits to be admitted, the
  // engine queues up to this many steps at once, each step's input the previous step's draw on the device,
  // and reads their tokens back with one sync (then applies stops; tokens drawn past a stop are dropped).
  // The tokens are those of one step at a time (same keys, same logits). Off for rows with a repetition
  // penalty. 0: 8 on CUDA with graphs, 1 elsewhere (where the host is not what the GPU waits for).
  int decode_steps = 0;
};

struct EngineStats {
  int64_t waiting = 0, running = 0;      // sequences
  int64_t kv_blocks_total = 0, kv_blocks_free = 0;
  int64_t steps = 0, prompt_tokens = 0, generated_tokens = 0;
  int64_t preemptions = 0, requests_finished = 0, requests_rejected = 0;
  int64_t max_running = 0;  // high-water mark of running sequences
  int64_t cuda_graph_replays = 0;
  // Host wall time of the engine thread's steps, summed, by phase: scheduling and preemption; the model step
  // (input packing and kernel launches — asynchronous on CUDA); sampling (waits for the GPU: its one sync);
  // appending tokens, detokenising and stop checks; callbacks. On CUDA, forward_s ≪ sample_s means the GPU is
  // the bottleneck, forward_s + append_s + emit_s near the step time means the host is.
  double schedule_s = 0, forward_s = 0, sample_s = 0, append_s = 0, emit_s = 0;
  int64_t multi_step_rounds =
      0;  // host round trips that ran several decode steps (EngineOptions::decode_steps)
};

class EngineImpl;

class Engine {
 public:
  // Takes a handle to `model` (shared: a trainer holding the same Decoder updates the weights the engine
  // reads). `tok` is needed for text prompts, text outputs and stop strings. eos_token_ids stop every request
  // that does not set ignore_eos.
  static Result<std::unique_ptr<Engine>> create(model::Decoder model, std::optional<tokenizer::Tokenizer> tok,
                                                std::vector<int32_t> eos_token_ids, const EngineOptions& options);
  // A Hugging Face checkpoint directory: config.json, weights, tokenizer.json when present, eos ids from
  // config.json and generation_config.json.
  static Result<std::unique_ptr<Engine>> load(const std::filesystem::path& dir,
                                              const model::ModelOptions& model_options,
                                              const EngineOptions& options);
  ~Engine();  // cancels what is still running and joins the engine thread

  // Queues a request; returns its id. A request that can never run (prompt empty or longer than the
  // context, bad sampling parameters, n too large, bigger than the whole KV cache) gets one final update
  // with a non-ok status, from the calling thread.
  uint64_t submit(Request request, Callback callback);
  // Runs all requests concurrently and returns their outputs in order.
  std::vector<RequestOutput> generate(std::vector<Request> requests);
  // Finishes the request's unfinished samples with reason "cancelled" at the next step. Unknown ids: no-op.
  void cancel(uint64_t request_id);

  // The fence described above. fn runs on the engine thread; returns fn's status.
  Status update_weights(const std::function<Status(model::Decoder&)>& fn);
  uint64_t weight_version() const;

  EngineStats stats() const;
  const model::ModelConfig& config() const;
  const tokenizer::Tokenizer* tokenizer() const;  // null without one
  const std::vector<int32_t>& eos_token_ids() const;
  int64_t max_model_len() const;
  const EngineOptions& options() const;
  // Checks a request without queueing it (what submit would reject, and why).
  Status validate(const Request& request) const;

 private:
  explicit Engine(std::unique_ptr<EngineImpl> impl);
  std::unique_ptr<EngineImpl> impl_;
};

// ---- OpenAI-compatible HTTP server --------------------------------------------------------------------

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                   // 0: any free port (see OpenAiServer::port())
  std::string model_name = "model";  // the id /v1/models lists and requests must name
  std::size_t max_body_bytes = 8u << 20;
  int max_n = 64;                 // largest n per request
  int64_t default_max_tokens = 256;
  int threads = 32;               // HTTP worker threads (a streaming response holds one)
  int max_concurrent_requests = 0;  // > 0: generation requests beyond it get 429 with Retry-After: 1
};

// /v1/completions, /v1/chat/completions (stream as SSE), /v1/models, /healthz, /metrics (Prometheus text).
// Errors are OpenAI-style JSON ({"error": {"message", "type", "code"}}) with a 4xx status.
class OpenAiServer {
 public:
  OpenAiServer(Engine& engine, ServerOptions options);
  ~OpenAiServer();
  Status start();  // binds and serves on a background thread
  void stop();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- A client for external OpenAI-compatible servers (vLLM, SGLang, API models, our own) -------------

struct RemoteOptions {
  std::string base_url = "http://127.0.0.1:8000";  // scheme://host:port[/prefix]; "/v1/..." is appended
  std::string model;                               // the "model" field sent
  std::string api_key;                             // Authorization: Bearer ... when not empty
  double timeout_seconds = 600;                    // per HTTP attempt (connect + read)
  int max_retries = 5;                             // on connection errors, 429, 5xx
  double backoff_seconds = 0.5;                    // first retry delay, doubled per retry (429 Retry-After wins)
  double max_backoff_seconds = 30;
  int concurrency = 16;  // requests in flight at once in generate()
};

// The same request/response types as Engine, sent as /v1/completions (text prompt, or token ids when the
// prompt is ids) or /v1/chat/completions (chat()). Token ids come back only where the server returns them;
// text and raw logprobs (the server's "logprobs") always. Thread-safe.
class RemoteEngine {
 public:
  explicit RemoteEngine(RemoteOptions options);
  Result<RequestOutput> complete(const Request& request) const;
  Result<RequestOutput> chat(const std::vector<std::pair<std::string, std::string>>& messages,
                             const SamplingParams& sampling) const;
  // Runs requests concurrently (options.concurrency); failures are in each output's status.
  std::vector<RequestOutput> generate(const std::vector<Request>& requests) const;
  int64_t retries() const { return *retries_; }  // attempts repeated so far (429, 5xx, connection errors)

 private:
  RemoteOptions options_;
  std::shared_ptr<std::atomic<int64_t>> retries_ = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace musacoder::engine
