#include "engine/engine_core.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "core/check.h"

#ifdef MUSACODER_ENGINE_CUDA
#include "engine/paged_attention_cuda.h"
#endif

namespace musacoder::engine {
namespace {

int64_t blocks_for(int64_t tokens, int64_t bs) { return (tokens + bs - 1) / bs; }

// Bytes for the KV cache per the options (see EngineOptions::kv_cache_gb).
int64_t kv_cache_bytes(const EngineOptions& o, const torch::Device& device) {
  if (o.kv_cache_gb > 0) return static_cast<int64_t>(o.kv_cache_gb * static_cast<double>(1ll << 30));
#ifdef MUSACODER_ENGINE_CUDA
  if (device.is_cuda()) return static_cast<int64_t>(o.kv_cache_memory_fraction * static_cast<double>(cuda_free_bytes(device.index())));
#else
  (void)device;
#endif
  return 1ll << 30;
}

}  // namespace

Result<std::unique_ptr<EngineCore>> EngineCore::create(model::Decoder model, std::optional<tokenizer::Tokenizer> tok,
                                                       std::vector<int32_t> eos, const EngineOptions& o) {
  const auto& c = model->config();
  if (o.block_size < 1 || o.max_num_seqs < 1 || o.max_num_batched_tokens < 1 || o.max_samples_per_request < 1)
    return invalid_argument("engine options: block_size, max_num_seqs, max_num_batched_tokens and "
                            "max_samples_per_request must be positive");
  const int64_t max_len = o.max_model_len > 0 ? o.max_model_len : c.max_position_embeddings;
  if (max_len < 2) return invalid_argument("max_model_len must be at least 2");
  const auto weight = model->model->embed_tokens->weight;
  auto mixers = ModelRunner::make_mixers(model, o.fuse_projections);
  std::vector<LayerCacheSpec> specs;
  for (const auto& m : mixers) specs.push_back(m->cache_spec());
  const int64_t per_block = std::max<int64_t>(1, CachePool::bytes_per_block(specs, o.block_size, weight.scalar_type()));
  // More blocks than max_num_seqs full-length sequences can use are never needed.
  const int64_t useful = o.max_num_seqs * blocks_for(max_len, o.block_size) + 1;
  const int64_t blocks = std::min(useful, kv_cache_bytes(o, weight.device()) / per_block);
  if (blocks < 2) return invalid_argument("the KV cache budget holds no block (raise --kv-cache-gb)");
  std::unique_ptr<EngineCore> core(
      new EngineCore(std::move(model), std::move(tok), std::move(eos), o, max_len, static_cast<int32_t>(blocks)));
  core->runner_ = std::make_unique<ModelRunner>(core->model_, std::move(mixers), core->pool_.get(), o, max_len);
  return core;
}

EngineCore::EngineCore(model::Decoder model, std::optional<tokenizer::Tokenizer> tok, std::vector<int32_t> eos,
                       const EngineOptions& options, int64_t max_model_len, int32_t num_blocks)
    : model_(std::move(model)), tok_(std::move(tok)), eos_(std::move(eos)), options_(options),
      max_model_len_(max_model_len) {
  auto mixers = ModelRunner::make_mixers(model_, /*fuse_projections=*/false);  // for the cache specs only
  std::vector<LayerCacheSpec> specs;
  for (const auto& m : mixers) specs.push_back(m->cache_spec());
  const auto weight = model_->model->embed_tokens->weight;
  pool_ = std::make_unique<CachePool>(specs, options_.block_size, num_blocks,
                                      static_cast<int32_t>(options_.max_num_seqs + 1),
                                      weight.options().requires_grad(false));
  sampler_ = std::make_unique<Sampler>(model_->config().vocab_size, weight.device());
  stats_.kv_blocks_total = pool_->blocks().num_allocatable();
}

Result<std::vector<int32_t>> EngineCore::check(const Request& r) const {
  const SamplingParams& p = r.sampling;
  std::vector<int32_t> ids = r.prompt_ids;
  if (ids.empty() && !r.prompt.empty()) {
    if (!tok_) return invalid_argument("a text prompt needs a tokenizer (the model directory has no tokenizer.json)");
    auto enc = tok_->encode(r.prompt);
    if (!enc.ok()) return enc.status();
    ids = std::move(*enc);
  }
  if (ids.empty()) return invalid_argument("the prompt is empty");
  for (int32_t id : ids)
    if (id < 0 || id >= model_->config().vocab_size)
      return invalid_argument("prompt token id " + std::to_string(id) + " is outside the vocabulary");
  const int64_t P = static_cast<int64_t>(ids.size());
  if (P >= max_model_len_)
    return invalid_argument("the prompt has " + std::to_string(P) + " tokens; the context holds " +
                            std::to_string(max_model_len_) + " (prompt + at least one new token)");
  if (p.max_new_tokens < 1) return invalid_argument("max_new_tokens must be >= 1");
  if (!(p.temperature >= 0)) return invalid_argument("temperature must be >= 0");
  if (!(p.top_p > 0 && p.top_p <= 1)) return invalid_argument("top_p must be in (0, 1]");
  if (p.top_k < 0) return invalid_argument("top_k must be >= 0");
  if (!(p.min_p >= 0 && p.min_p < 1)) return invalid_argument("min_p must be in [0, 1)");
  if (!(p.repetition_penalty > 0)) return invalid_argument("repetition_penalty must be > 0");
  if (p.n < 1 || p.n > options_.max_samples_per_request)
    return invalid_argument("n must be in [1, " + std::to_string(options_.max_samples_per_request) + "]");
  if (p.top_logprobs < 0 || p.top_logprobs > 20) return invalid_argument("top_logprobs must be in [0, 20]");
  if (!p.stop.empty() && !tok_) return invalid_argument("stop strings need a tokenizer");
  const int64_t longest = std::min(P + p.max_new_tokens, max_model_len_);
  if (blocks_for(longest, options_.block_size) > pool_->blocks().num_allocatable())
    return invalid_argument("one sample needs " + std::to_string(blocks_for(longest, options_.block_size)) +
                            " KV blocks; the cache has " + std::to_string(pool_->blocks().num_allocatable()) +
                            " (raise --kv-cache-gb or lower max_tokens)");
  return ids;
}

void EngineCore::add(uint64_t id, Request request, Callback callback) {
  auto r = std::make_unique<RequestState>();
  r->id = id;
  r->callback = std::move(callback);
  r->output.request_id = id;
  r->output.tag = request.tag;
  r->output.prompt_tokens = static_cast<int64_t>(request.prompt_ids.size());
  const SamplingParams& p = request.sampling;
  r->max_len = std::min(r->output.prompt_tokens + p.max_new_tokens, max_model_len_);
  const uint64_t seed = p.seed ? *p.seed : std::random_device{}() * 0x100000001ull + std::random_device{}();
  Waiting w{r.get(), {}, r->output.prompt_tokens};
  for (int i = 0; i < p.n; ++i) {
    auto s = std::make_unique<SequenceState>();
    s->request = r.get();
    s->index = i;
    s->tokens = request.prompt_ids;
    s->prompt_len = r->output.prompt_tokens;
    s->seed = sample_seed(seed, i);
    s->detok = IncrementalDetokenizer(tokenizer());
    s->stop = StopChecker(p.stop);
    w.seqs.push_back(s.get());
    r->seqs.push_back(std::move(s));
    Sample sample;
    sample.index = i;
    r->output.samples.push_back(std::move(sample));
  }
  r->unfinished = p.n;
  r->request = std::move(request);
  stats_.prompt_tokens += r->output.prompt_tokens;
  waiting_.push_back(std::move(w));
  requests_.emplace(id, std::move(r));
}

void EngineCore::cancel(uint64_t id) {
  auto it = requests_.find(id);
  if (it != requests_.end()) it->second->cancelled = true;
}

void EngineCore::cancel_all() {
  for (auto& [id, r] : requests_) r->cancelled = true;
}

bool EngineCore::has_started_work() const {
  for (const auto& [id, r] : requests_)
    if (r->started) return true;
  return false;
}

EngineStats EngineCore::stats() const {
  EngineStats s = stats_;
  s.running = static_cast<int64_t>(running_.size());
  s.waiting = pending_followers_;
  for (const auto& w : waiting_) s.waiting += static_cast<int64_t>(w.seqs.size());
  s.kv_blocks_free = pool_->blocks().num_free();
  s.cuda_graph_replays = runner_->graph_replays();
  return s;
}

// ---- scheduling --------------------------------------------------------------------------------------------

void EngineCore::purge_cancelled() {
  for (auto& [id, r] : requests_) {
    if (!r->cancelled || r->unfinished == 0) continue;
    std::erase_if(waiting_, [&](const Waiting& w) { return w.request == r.get(); });
    for (auto& s : r->seqs) {
      if (!s->followers.empty()) pending_followers_ -= static_cast<int64_t>(s->followers.size());
      s->followers.clear();
    }
    for (auto& s : r->seqs)
      if (!s->finished) finish(s.get(), FinishReason::kCancelled);
  }
}

void EngineCore::preempt(SequenceState* s) {
  pool_->release(s->cache);
  s->computed = 0;
  s->running = false;
  std::erase(running_, s);
  Waiting w{s->request, {s}, s->fork_at};
  for (SequenceState* f : s->followers) w.seqs.push_back(f);
  pending_followers_ -= static_cast<int64_t>(s->followers.size());
  s->followers.clear();
  waiting_.push_front(std::move(w));
  ++stats_.preemptions;
}

bool EngineCore::schedule_decode(SequenceState* s, std::vector<SeqWork>& works, std::vector<SequenceState*>& order) {
  while (!pool_->prepare_write(s->cache, s->computed, s->computed + 1)) {
    // The most recently admitted sequence not yet scheduled this step gives its blocks back.
    SequenceState* victim = nullptr;
    for (auto it = running_.rbegin(); it != running_.rend() && !victim; ++it)
      if (*it != s && std::find(order.begin(), order.end(), *it) == order.end()) victim = *it;
    if (!victim) {
      preempt(s);
      return false;
    }
    preempt(victim);
  }
  works.push_back({&s->tokens, s->computed, 1, &s->cache, true});
  order.push_back(s);
  return true;
}

bool EngineCore::schedule_prefill(SequenceState* s, int64_t& budget, std::vector<SeqWork>& works,
                                  std::vector<SequenceState*>& order) {
  const int64_t len = static_cast<int64_t>(s->tokens.size());
  const int64_t target = s->followers.empty() ? len : s->fork_at;
  const int64_t count = std::min(target - s->computed, budget);
  if (count <= 0) return false;
  if (!pool_->ensure_state_slot(s->cache) || !pool_->prepare_write(s->cache, s->computed, s->computed + count))
    return false;
  works.push_back({&s->tokens, s->computed, count, &s->cache, s->computed + count == len});
  order.push_back(s);
  budget -= count;
  return true;
}

int32_t EngineCore::blocks_to_admit(const Waiting& w) const {
  const int64_t bs = options_.block_size;
  int64_t need = blocks_for(static_cast<int64_t>(w.seqs[0]->tokens.size()) + 1, bs);
  for (std::size_t i = 1; i < w.seqs.size(); ++i)
    need += blocks_for(static_cast<int64_t>(w.seqs[i]->tokens.size()) + 1, bs) - w.fork_at / bs;
  return static_cast<int32_t>(std::min<int64_t>(need, pool_->blocks().num_allocatable()));
}

bool EngineCore::admit(int64_t& budget, std::vector<SeqWork>& works, std::vector<SequenceState*>& order) {
  if (waiting_.empty() || budget <= 0) return false;
  Waiting& w = waiting_.front();
  if (!admit_new_ && !w.request->started) return false;
  const int64_t seqs = static_cast<int64_t>(running_.size()) + pending_followers_;
  if (seqs + static_cast<int64_t>(w.seqs.size()) > options_.max_num_seqs && seqs > 0) return false;
  if (blocks_to_admit(w) > pool_->blocks().num_free()) return false;
  if (pool_->has_state_layers() &&
      pool_->state_slots().num_free() < static_cast<int32_t>(w.seqs.size()))
    return false;
  SequenceState* leader = w.seqs[0];
  leader->followers.assign(w.seqs.begin() + 1, w.seqs.end());
  leader->fork_at = w.fork_at;
  leader->computed = 0;
  leader->running = true;
  pending_followers_ += static_cast<int64_t>(leader->followers.size());
  if (!w.request->started) {
    w.request->started = true;
    w.request->output.weight_version = weight_version_;
  }
  waiting_.pop_front();
  running_.push_back(leader);
  schedule_prefill(leader, budget, works, order);
  return true;
}

std::vector<SeqWork> EngineCore::schedule(std::vector<SequenceState*>& order) {
  std::vector<SeqWork> works;
  int64_t budget = options_.max_num_batched_tokens;
  const auto snapshot = running_;
  for (SequenceState* s : snapshot) {
    if (budget <= 0) break;
    const bool decode = s->running && s->computed > 0 && s->followers.empty() &&
                        static_cast<int64_t>(s->tokens.size()) - s->computed == 1;
    if (decode && schedule_decode(s, works, order)) --budget;
  }
  for (SequenceState* s : running_) {
    if (budget <= 0) break;
    if (std::find(order.begin(), order.end(), s) == order.end()) schedule_prefill(s, budget, works, order);
  }
  while (admit(budget, works, order)) {
  }
  return works;
}

// ---- one step ------------------------------------------------------------------------------------------

namespace {
double seconds_since(std::chrono::steady_clock::time_point& t) {  // and restarts t
  const auto now = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(now - t).count();
  t = now;
  return s;
}
}  // namespace

void EngineCore::step() {
  auto t = std::chrono::steady_clock::now();
  purge_cancelled();
  std::vector<SequenceState*> order;
  std::vector<SeqWork> works = schedule(order);
  // Prefills that found no free block while others hold them: make room by preemption (never a deadlock:
  // one sequence alone always fits, check() made sure).
  while (works.empty() && running_.size() > 1) {
    preempt(running_.back());
    order.clear();
    works = schedule(order);
  }
  if (works.empty()) {
    emit_updates();
    return;
  }
  if (const int64_t k = decode_steps_now(works, order); k > 1) {
    stats_.schedule_s += seconds_since(t);
    multi_step(works, order, k);
    return;
  }
  stats_.schedule_s += seconds_since(t);
  torch::Tensor logits = runner_->step(works);
  ++stats_.steps;
  stats_.forward_s += seconds_since(t);
  // Followers forked at the prompt's end draw their first token from their leader's logits row.
  std::vector<std::vector<SequenceState*>> same_row(works.size());
  for (std::size_t i = 0; i < works.size(); ++i) {
    SequenceState* s = order[i];
    s->computed += works[i].count;
    if (s->followers.empty() || s->computed != s->fork_at) continue;
    for (SequenceState* f : fork_followers(s))
      if (works[i].want_logits && f->tokens.size() == static_cast<std::size_t>(f->computed)) same_row[i].push_back(f);
  }
  sample_and_append(logits, order, works, same_row);
  stats_.max_running = std::max(stats_.max_running, static_cast<int64_t>(running_.size()));
  t = std::chrono::steady_clock::now();
  emit_updates();
  stats_.emit_s += seconds_since(t);
}

int64_t EngineCore::decode_steps_now(const std::vector<SeqWork>& works,
                                     const std::vector<SequenceState*>& order) {
  int64_t k = options_.decode_steps;
  if (k <= 0) k = runner_->decode_graphs_for(static_cast<int64_t>(works.size())) ? 8 : 1;
  if (k < 2 || !waiting_.empty() || pending_followers_ > 0) return 1;
  for (std::size_t i = 0; i < works.size(); ++i) {
    const SequenceState* s = order[i];
    if (works[i].count != 1 || works[i].cached == 0 || !works[i].want_logits) return 1;
    if (s->request->request.sampling.repetition_penalty != 1.0 || s->request->cancelled) return 1;
    // Never past the request's length: the last of the k tokens is at most its max_len-th.
    k = std::min<int64_t>(k, s->request->max_len - static_cast<int64_t>(s->tokens.size()));
  }
  if (k < 2) return 1;
  for (SequenceState* s : order)  // blocks for the k positions (a failure leaves the blocks taken so far)
    if (!pool_->prepare_write(s->cache, s->computed, s->computed + k)) return 1;
  return k;
}

void EngineCore::multi_step(std::vector<SeqWork>& works, const std::vector<SequenceState*>& order,
                            int64_t k) {
  auto t = std::chrono::steady_clock::now();
  std::vector<SamplingRow> rows;
  for (const SequenceState* s : order)
    rows.push_back({&s->request->request.sampling, s->seed,
                    static_cast<int64_t>(s->tokens.size()) - s->prompt_len, nullptr});
  std::vector<DeviceDraw> draws;
  for (int64_t j = 0; j < k; ++j) {
    if (j > 0) {
      for (auto& w : works) ++w.cached;
      for (auto& r : rows) ++r.step;
    }
    torch::Tensor logits = runner_->step(works, j > 0 ? draws.back().token : torch::Tensor());
    draws.push_back(sampler_->draw(logits, rows));  // queued behind the forward; consumed before the next
  }
  stats_.steps += k;
  ++stats_.multi_step_rounds;
  stats_.forward_s += seconds_since(t);
  const auto drawn = Sampler::to_host(draws, rows);
  stats_.sample_s += seconds_since(t);
  for (int64_t j = 0; j < k; ++j)
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (order[i]->finished) continue;  // a token drawn after a stop: dropped
      ++order[i]->computed;
      append(order[i], drawn[static_cast<std::size_t>(j)][i]);
    }
  stats_.append_s += seconds_since(t);
  stats_.max_running = std::max(stats_.max_running, static_cast<int64_t>(running_.size()));
  emit_updates();
  stats_.emit_s += seconds_since(t);
}

std::vector<SequenceState*> EngineCore::fork_followers(SequenceState* leader) {
  std::vector<SequenceState*> forked = std::move(leader->followers);
  leader->followers.clear();
  for (SequenceState* f : forked) {
    MC_CHECK(pool_->fork(leader->cache, leader->fork_at, f->cache));  // admit() checked the free slots
    f->computed = leader->fork_at;
    f->running = true;
    running_.push_back(f);
  }
  pending_followers_ -= static_cast<int64_t>(forked.size());
  return forked;
}

void EngineCore::sample_and_append(const torch::Tensor& logits, const std::vector<SequenceState*>& order,
                                   const std::vector<SeqWork>& works,
                                   const std::vector<std::vector<SequenceState*>>& same_row) {
  std::vector<SequenceState*> seqs;
  std::vector<int64_t> rows;
  int64_t row = 0;
  for (std::size_t i = 0; i < works.size(); ++i) {
    if (!works[i].want_logits) continue;
    seqs.push_back(order[i]);
    rows.push_back(row);
    for (SequenceState* f : same_row[i]) {
      seqs.push_back(f);
      rows.push_back(row);
    }
    ++row;
  }
  if (seqs.empty()) return;
  torch::Tensor x = logits;
  if (static_cast<int64_t>(rows.size()) != logits.size(0))
    x = logits.index_select(0, torch::tensor(rows, torch::kLong).to(logits.device()));
  std::vector<SamplingRow> sampling;
  for (SequenceState* s : seqs)
    sampling.push_back({&s->request->request.sampling, s->seed,
                        static_cast<int64_t>(s->tokens.size()) - s->prompt_len, &s->tokens});
  auto t = std::chrono::steady_clock::now();
  std::vector<SampledToken> drawn = sampler_->sample(x, sampling);
  stats_.sample_s += seconds_since(t);
  for (std::size_t i = 0; i < seqs.size(); ++i) append(seqs[i], drawn[i]);
  stats_.append_s += seconds_since(t);
}

void EngineCore::append(SequenceState* s, const SampledToken& t) {
  RequestState& r = *s->request;
  const SamplingParams& p = r.request.sampling;
  s->tokens.push_back(t.token);
  Sample& out = r.output.samples[static_cast<std::size_t>(s->index)];
  auto& delta = r.deltas.try_emplace(s->index, SampleDelta{s->index, out.token_ids.size(), "", false}).first->second;
  out.token_ids.push_back(t.token);
  out.logprobs.push_back(t.logprob);
  out.raw_logprobs.push_back(t.raw_logprob);
  if (p.top_logprobs > 0) out.top_logprobs.push_back(t.top);
  ++stats_.generated_tokens;
  const bool stop_id = std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), t.token) != p.stop_token_ids.end() ||
                       (!p.ignore_eos && std::find(eos_.begin(), eos_.end(), t.token) != eos_.end());
  StopChecker::Piece piece;
  if (!stop_id) piece = s->stop.append(s->detok.push(t.token));
  delta.text += piece.emit;
  FinishReason reason = FinishReason::kNone;
  if (piece.stopped) {
    reason = FinishReason::kStop;
    out.stop_string = piece.matched;
  } else if (stop_id) {
    reason = FinishReason::kStop;
  } else if (static_cast<int64_t>(s->tokens.size()) >= r.max_len) {
    reason = FinishReason::kLength;
  }
  if (reason == FinishReason::kNone) {
    out.text += piece.emit;  // == the emitted prefix of s->stop.text(); appending keeps a token O(1), not O(length)
    return;
  }
  if (!piece.stopped) delta.text += s->stop.append(s->detok.flush()).emit;
  if (!piece.stopped) delta.text += s->stop.flush();
  finish(s, reason);
}

void EngineCore::finish(SequenceState* s, FinishReason reason) {
  RequestState& r = *s->request;
  s->finished = true;
  s->running = false;
  pool_->release(s->cache);
  std::erase(running_, s);
  Sample& out = r.output.samples[static_cast<std::size_t>(s->index)];
  out.finish_reason = reason;
  out.text = s->stop.text();
  auto& delta = r.deltas.try_emplace(s->index, SampleDelta{s->index, out.token_ids.size(), "", false}).first->second;
  delta.finished = true;
  if (--r.unfinished == 0) {
    r.output.finished = true;
    ++stats_.requests_finished;
  }
}

EngineStats EngineCore::snapshot() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_;
}

void EngineCore::emit_updates() {
  {
    std::lock_guard lock(snapshot_mu_);
    snapshot_ = stats();
  }
  for (auto it = requests_.begin(); it != requests_.end();) {
    RequestState& r = *it->second;
    if (!r.deltas.empty() || r.output.finished) {
      RequestUpdate u{r.output, {}, r.output.finished};
      for (auto& [i, d] : r.deltas) u.deltas.push_back(std::move(d));
      r.deltas.clear();
      if (r.callback) r.callback(u);
    }
    it = r.output.finished ? requests_.erase(it) : std::next(it);
  }
}

}  // namespace musacoder::engine
