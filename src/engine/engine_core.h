// EngineCore: the single-threaded heart of the engine — requests, sequences, the scheduler and one step().
// Engine (engine.cpp) drives it from its thread; tests may drive it directly, step by step.
//
// A request of n samples is one "leader" sequence that prefills the prompt, plus n - 1 followers that fork
// the leader's cache when its prefill reaches the fork point (the prompt's end): they share its KV blocks
// (copy-on-write) and a copy of its state slots, and take their first token from the same logits row.
//
// One step:
//   1. schedule  running decodes first (one token each; when a block is missing and none is free, the most
//                recently admitted other sequence is preempted: its cache is freed and it goes back to the
//                front of the queue to be recomputed later — its sampler stream does not change, so neither
//                does its output); then running prefills in chunks, then queued requests in arrival order,
//                while the step's token budget, max_num_seqs and free KV blocks allow (a request that does
//                not fit waits; it never fails for want of memory);
//   2. forward   ModelRunner::step over the scheduled tokens;
//   3. sample    one batched draw for every sequence whose prefill completed or that decoded;
//   4. finish    stop ids, stop strings, max tokens, context end; callbacks with the step's deltas.
// When every scheduled sequence decodes and nothing waits (EngineOptions::decode_steps), steps 2-3 repeat
// k times on the device before one sync — each step's input the previous step's draw — and step 4 applies
// the k tokens of each sequence in order, dropping those drawn after it finished.
// Not thread-safe.
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <vector>

#include "engine/cache.h"
#include "engine/detokenizer.h"
#include "engine/engine.h"
#include "engine/model_runner.h"
#include "engine/sampler.h"

namespace musacoder::engine {

struct RequestState;

struct SequenceState {
  RequestState* request = nullptr;
  int index = 0;                 // sample index in the request
  std::vector<int32_t> tokens;   // prompt + generated
  int64_t prompt_len = 0;
  int64_t computed = 0;          // positions whose K/V (or state) is in the cache
  SequenceCache cache;
  uint64_t seed = 0;
  bool finished = false;
  bool running = false;
  std::vector<SequenceState*> followers;  // fork this sequence's cache at fork_at
  int64_t fork_at = 0;
  IncrementalDetokenizer detok{nullptr};
  StopChecker stop{{}};
};

struct RequestState {
  uint64_t id = 0;
  Request request;
  Callback callback;
  RequestOutput output;
  std::vector<std::unique_ptr<SequenceState>> seqs;
  int unfinished = 0;
  bool started = false;     // some sequence was admitted (it runs under output.weight_version)
  bool cancelled = false;
  int64_t max_len = 0;      // prompt + max new tokens, within the context
  std::map<int, SampleDelta> deltas;  // this step's
};

class EngineCore {
 public:
  static Result<std::unique_ptr<EngineCore>> create(model::Decoder model, std::optional<tokenizer::Tokenizer> tok,
                                                    std::vector<int32_t> eos_token_ids, const EngineOptions& options);

  // The prompt's ids (encoding `prompt` when prompt_ids is empty) and whether the request can ever run.
  Result<std::vector<int32_t>> check(const Request& request) const;
  // Queues a request that check() accepted (prompt_ids filled).
  void add(uint64_t id, Request request, Callback callback);
  void cancel(uint64_t id);  // takes effect at the next step
  void cancel_all();
  void step();
  bool has_work() const { return !requests_.empty(); }
  // Requests admitted under the current weights and not finished (the weight-update fence waits for 0).
  bool has_started_work() const;
  // false: queued requests that have not started stay queued (the fence).
  void set_admit_new(bool admit) { admit_new_ = admit; }
  void bump_weight_version() { ++weight_version_; }
  uint64_t weight_version() const { return weight_version_; }

  EngineStats stats() const;     // engine thread
  EngineStats snapshot() const;  // any thread: the stats as of the last step's end (before its callbacks)
  model::Decoder& model() { return model_; }
  ModelRunner& runner() { return *runner_; }
  const tokenizer::Tokenizer* tokenizer() const { return tok_ ? &*tok_ : nullptr; }
  const std::vector<int32_t>& eos_token_ids() const { return eos_; }
  const EngineOptions& options() const { return options_; }
  int64_t max_model_len() const { return max_model_len_; }

 private:
  struct Waiting {
    RequestState* request;
    std::vector<SequenceState*> seqs;  // seqs[0] leads; the others fork it at fork_at
    int64_t fork_at = 0;
  };
  EngineCore(model::Decoder model, std::optional<tokenizer::Tokenizer> tok, std::vector<int32_t> eos,
             const EngineOptions& options, int64_t max_model_len, int32_t num_blocks);

  void purge_cancelled();
  std::vector<SeqWork> schedule(std::vector<SequenceState*>& order);
  bool schedule_decode(SequenceState* s, std::vector<SeqWork>& works, std::vector<SequenceState*>& order);
  bool schedule_prefill(SequenceState* s, int64_t& budget, std::vector<SeqWork>& works,
                        std::vector<SequenceState*>& order);
  bool admit(int64_t& budget, std::vector<SeqWork>& works, std::vector<SequenceState*>& order);
  int32_t blocks_to_admit(const Waiting& w) const;
  void preempt(SequenceState* s);
  std::vector<SequenceState*> fork_followers(SequenceState* leader);  // returns the forked followers
  // k > 1 when this decode-only step may run as k device steps (blocks for them prepared), else 1.
  int64_t decode_steps_now(const std::vector<SeqWork>& works, const std::vector<SequenceState*>& order);
  void multi_step(std::vector<SeqWork>& works, const std::vector<SequenceState*>& order, int64_t k);
  void sample_and_append(const torch::Tensor& logits, const std::vector<SequenceState*>& order,
                         const std::vector<SeqWork>& works, const std::vector<std::vector<SequenceState*>>& same_row);
  void append(SequenceState* s, const SampledToken& t);
  void finish(SequenceState* s, FinishReason reason);
  void emit_updates();

  model::Decoder model_;
  std::optional<tokenizer::Tokenizer> tok_;
  std::vector<int32_t> eos_;
  EngineOptions options_;
  int64_t max_model_len_;
  std::unique_ptr<CachePool> pool_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<Sampler> sampler_;
  std::map<uint64_t, std::unique_ptr<RequestState>> requests_;
  std::deque<Waiting> waiting_;
  std::vector<SequenceState*> running_;  // in admission order
  int64_t pending_followers_ = 0;        // followers waiting for their leader's prefill
  bool admit_new_ = true;
  uint64_t weight_version_ = 0;
  EngineStats stats_;
  mutable std::mutex snapshot_mu_;
  EngineStats snapshot_;
};

}  // namespace musacoder::engine
