#include "engine/model_runner.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/check.h"
#include "engine/decode_graphs.h"
#include "engine/decode_linear_cuda.h"
#include "engine/paged_attention.h"
#ifdef MUSACODER_ENGINE_CUDA
#include "engine/fused_ops_cuda.h"
#endif

namespace musacoder::engine {

// ---- AttentionMixer (token_mixer.h) ------------------------------------------------------------------

torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  auto rotated = torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos.unsqueeze(1) + rotated * sin.unsqueeze(1);
}

torch::Tensor norm(model::RMSNorm& n, torch::Tensor& h, const torch::Tensor& delta, bool fused) {
#ifdef MUSACODER_ENGINE_CUDA
  if (fused) return add_rms_norm_cuda(h, delta, n->weight, n->eps());
#endif
  MC_CHECK(!fused && "fused ops need a CUDA build");
  if (delta.defined()) h = h + delta;
  return n(h);
}

torch::Tensor LayerInput::normed() const {
  return engine::norm(norm, h, delta, ctx.fused_ops);
}

torch::Tensor LayerInput::linear(const torch::Tensor& weight, const torch::Tensor& bias) const {
#ifdef MUSACODER_ENGINE_CUDA
  if (ctx.decode_linear && decode_linear_takes(h.size(0), weight))
    return norm_linear_cuda(h, delta, norm->weight, norm->eps(), weight, bias);
#endif
  return torch::nn::functional::linear(normed(), weight, bias);
}

std::vector<torch::Tensor> LayerInput::project(const FusedLinear& linear) const {
  return linear.fused() ? linear.split(this->linear(linear.weight(), linear.bias())) : linear(normed());
}

torch::Tensor rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, bool fused) {
#ifdef MUSACODER_ENGINE_CUDA
  if (fused) return rope_cuda(x, cos, sin);
#endif
  MC_CHECK(!fused && "fused ops need a CUDA build");
  return rotate(x, cos, sin);
}

namespace {

// q and k rotated (in place of the inputs) and the rotated k and v written into the layer's pages: one kernel
// when the fused ops are on and the cache has the activations' dtype, else the modules' ops and write_kv.
void rope_and_write_kv(torch::Tensor& q, torch::Tensor& k, const torch::Tensor& v, const StepContext& ctx,
                       torch::Tensor& kp, torch::Tensor& vp) {
#ifdef MUSACODER_ENGINE_CUDA
  if (ctx.fused_ops && kp.scalar_type() == k.scalar_type() && kp.is_contiguous() && vp.is_contiguous()) {
    std::tie(q, k) = rope_write_kv_cuda(q, k, v, ctx.cos, ctx.sin, ctx.slots, kp, vp);
    return;
  }
#endif
  q = rope(q, ctx.cos, ctx.sin, ctx.fused_ops);
  k = rope(k, ctx.cos, ctx.sin, ctx.fused_ops);
  write_kv(kp, vp, ctx.slots, k, v);
}

// The attention of the step's prefill rows (after its decodes), appended to parts in row order: one varlen
// flash call when every prefill starts at position 0 (StepContext::prefill_cu_seqlens) and the kernel takes
// this dtype, else one call per sequence (over its cached context and new rows).
void append_prefill_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                              const StepContext& ctx, const torch::Tensor& kp, const torch::Tensor& vp,
                              double scale, std::vector<torch::Tensor>& parts) {
  if (ctx.prefill_cu_seqlens.defined()) {
    const int64_t start = ctx.num_decode, rows = q.size(0) - start;
    auto packed = [&](const torch::Tensor& t) {
      return t.narrow(0, start, rows).transpose(0, 1).unsqueeze(0);
    };
    const torch::Tensor qp = packed(q), kn = packed(k), vn = packed(v);
    if (model::packed_flash_usable(qp, kn)) {
      parts.push_back(model::packed_sdpa(qp, kn, vn, ctx.prefill_cu_seqlens, scale, ctx.prefill_max_len)
                          .squeeze(0)
                          .transpose(0, 1));
      return;
    }
  }
  for (std::size_t s = static_cast<std::size_t>(ctx.num_decode); s < ctx.seqs.size(); ++s) {
    const auto& seq = ctx.seqs[s];
    parts.push_back(prefill_attention(q.narrow(0, seq.offset, seq.count), k.narrow(0, seq.offset, seq.count),
                                      v.narrow(0, seq.offset, seq.count), kp, vp, seq.context_slots,
                                      seq.cached, scale));
  }
}

bool fused_ops_built() {
#ifdef MUSACODER_ENGINE_CUDA
  return true;
#else
  return false;
#endif
}

// gate_up: the layer's gate_proj and up_proj as one matmul (FusedLinear); with ctx.decode_linear the norm
// goes into the gate/up kernel and SiLU·mul into the down projection's.
torch::Tensor mlp(model::Mlp& m, const FusedLinear& gate_up, const LayerInput& in) {
  const auto gu = in.project(gate_up);
  const bool fused = in.ctx.fused_ops;
#ifdef MUSACODER_ENGINE_CUDA
  auto& down = m->down_proj;
  if (in.ctx.decode_linear && decode_linear_takes(gu[0].size(0), down->weight))
    return silu_mul_linear_cuda(gu[0], gu[1], down->weight, down->bias);
  if (fused) return down(silu_mul_cuda(gu[0], gu[1]));
#endif
  MC_CHECK(!fused && "fused ops need a CUDA build");
  return m->down_proj(torch::silu(gu[0]) * gu[1]);
}

}  // namespace

AttentionMixer::AttentionMixer(model::AttentionImpl* attention, const model::ModelConfig& c,
                               bool fuse_projections)
    : attn_(attention),
      heads_(c.num_attention_heads),
      kv_heads_(c.num_key_value_heads),
      head_dim_(c.head_dim),
      scale_(1.0 / std::sqrt(static_cast<double>(c.head_dim))),
      qkv_({attention->q_proj, attention->k_proj, attention->v_proj}, fuse_projections) {}

LayerCacheSpec AttentionMixer::cache_spec() const {
  LayerCacheSpec s;
  s.kind = LayerKind::kAttention;
  s.kv_heads = kv_heads_;
  s.head_dim = head_dim_;
  return s;
}

torch::Tensor AttentionMixer::decode_qkv_rope(const LayerInput& in, const StepContext& ctx, torch::Tensor& kp,
                                              torch::Tensor& vp) {
#ifdef MUSACODER_ENGINE_CUDA
  if (ctx.decode_linear && !attn_->q_norm && qkv_.fused() && kp.scalar_type() == in.h.scalar_type() &&
      kp.is_contiguous() && vp.is_contiguous() && decode_linear_takes(in.h.size(0), qkv_.weight()))
    return norm_qkv_rope_cuda(in.h, in.delta, in.norm->weight, in.norm->eps(), qkv_.weight(), qkv_.bias(),
                              static_cast<int>(heads_), static_cast<int>(kv_heads_),
                              static_cast<int>(head_dim_), ctx.cos, ctx.sin, ctx.slots, kp, vp);
#endif
  (void)in, (void)ctx, (void)kp, (void)vp;
  return {};
}

torch::Tensor AttentionMixer::forward(const LayerInput& in, const StepContext& ctx, CachePool& cache,
                                      int layer) {
  torch::Tensor& kp = cache.k(layer);
  torch::Tensor& vp = cache.v(layer);
  if (const torch::Tensor q = decode_qkv_rope(in, ctx, kp, vp); q.defined()) {  // a decode-only step
    const auto out = paged_decode(q, kp, vp, ctx.block_tables, ctx.context_lens, ctx.max_context, scale_,
                                  ctx.use_decode_kernel)
                         .reshape({q.size(0), heads_ * head_dim_});
#ifdef MUSACODER_ENGINE_CUDA
    const auto& o = attn_->o_proj;
    if (decode_linear_takes(out.size(0), o->weight) && out.stride(1) == 1)
      return decode_linear_cuda(out, o->weight, o->bias);
#endif
    return attn_->o_proj(out);
  }
  const auto qkv = in.project(qkv_);
  const int64_t N = qkv[0].size(0);
  auto q = qkv[0].view({N, heads_, head_dim_});
  auto k = qkv[1].view({N, kv_heads_, head_dim_});
  auto v = qkv[2].view({N, kv_heads_, head_dim_});
  if (attn_->q_norm) {
    q = norm(attn_->q_norm, q, {}, ctx.fused_ops);
    k = norm(attn_->k_norm, k, {}, ctx.fused_ops);
  }
  rope_and_write_kv(q, k, v, ctx, kp, vp);
  std::vector<torch::Tensor> parts;
  if (ctx.num_decode > 0) {
    parts.push_back(paged_decode(q.narrow(0, 0, ctx.num_decode), kp, vp, ctx.block_tables, ctx.context_lens,
                                 ctx.max_context, scale_, ctx.use_decode_kernel));
  }
  append_prefill_attention(q, k, v, ctx, kp, vp, scale_, parts);
  auto out = parts.size() == 1 ? parts[0] : torch::cat(parts, 0);
  return attn_->o_proj(out.reshape({N, heads_ * head_dim_}));
}

// ---- ModelRunner ----------------------------------------------------------------------------------------

namespace {

int64_t slot_of(const SequenceCache& c, int64_t pos, int64_t bs) {
  return static_cast<int64_t>(c.blocks[static_cast<std::size_t>(pos / bs)]) * bs + pos % bs;
}

// When the prefills (works from index `decodes` on) are two or more and all start at position 0: appends
// their cumulative row counts [0, c1, c1 + c2, ...] to host and returns the longest
// (StepContext::prefill_cu_seqlens); else appends nothing and returns 0.
int64_t append_prefill_runs(const std::vector<SeqWork>& works, int64_t decodes, std::vector<int64_t>& host) {
  const auto first = works.begin() + decodes;
  if (works.end() - first < 2 ||
      std::any_of(first, works.end(), [](const SeqWork& w) { return w.cached > 0; }))
    return 0;
  int64_t total = 0, longest = 0;
  host.push_back(0);
  for (auto it = first; it != works.end(); ++it) {
    total += it->count;
    longest = std::max(longest, it->count);
    host.push_back(total);
  }
  return longest;
}

// Views into one packed int64 device tensor, filled in order.
struct Unpacker {
  torch::Tensor all;
  int64_t at = 0;
  torch::Tensor next(int64_t n) {
    auto t = all.narrow(0, at, n);
    at += n;
    return t;
  }
};

}  // namespace

std::vector<std::unique_ptr<TokenMixer>> ModelRunner::make_mixers(model::Decoder& model,
                                                                  bool fuse_projections) {
  std::vector<std::unique_ptr<TokenMixer>> mixers;
  for (std::size_t i = 0; i < model->model->layers->size(); ++i) {
    auto layer = model->model->layers[i]->as<model::DecoderLayerImpl>();
    mixers.push_back(
        std::make_unique<AttentionMixer>(layer->self_attn.get(), model->config(), fuse_projections));
  }
  return mixers;
}

ModelRunner::ModelRunner(model::Decoder model, std::vector<std::unique_ptr<TokenMixer>> mixers, CachePool* pool,
                         const EngineOptions& options, int64_t max_model_len)
    : model_(std::move(model)),
      mixers_(std::move(mixers)),
      pool_(pool),
      options_(options),
      max_model_len_(max_model_len),
      device_(model_->model->embed_tokens->weight.device()) {
  fused_ops_ = device_.is_cuda() && options_.fused_ops && fused_ops_built();
  for (std::size_t i = 0; i < model_->model->layers->size(); ++i) {
    auto& m = model_->model->layers[i]->as<model::DecoderLayerImpl>()->mlp;
    gate_up_.emplace_back(std::vector<torch::nn::Linear>{m->gate_proj, m->up_proj},
                          options_.fuse_projections);
  }
  model::RotaryEmbedding rope(model_->config());
  inv_freq_ = rope.inv_freq(0).to(device_);
  rope_scaling_ = rope.attention_scaling();
  const bool dynamic = model_->config().rope.type == model::RopeType::kDynamic;
  const int64_t max_blocks = (max_model_len_ + pool_->block_size() - 1) / pool_->block_size();
  if (device_.is_cuda() && options_.cuda_graphs && !dynamic && cuda_decode_kernel_available(model_->config().head_dim) &&
      options_.cuda_decode_kernel && DecodeGraphs::available()) {
    auto forward = [this](const torch::Tensor& ids, const torch::Tensor& positions, const torch::Tensor& slots,
                          const torch::Tensor& tables, const torch::Tensor& lens) {
      StepContext ctx;
      const int64_t b = ids.size(0);
      for (int64_t i = 0; i < b; ++i) ctx.seqs.push_back({i, 1, 0, 0, {}});
      ctx.num_decode = b;
      ctx.positions = positions, ctx.slots = slots, ctx.block_tables = tables, ctx.context_lens = lens;
      ctx.max_context = max_model_len_;
      set_rope(ctx, 0);
      return forward_tokens(ids, ctx, torch::Tensor());
    };
    graphs_ = std::make_unique<DecodeGraphs>(options_.cuda_graph_batch_sizes, max_blocks, device_, forward);
  }
}

ModelRunner::~ModelRunner() = default;

void ModelRunner::reset_graphs() {
  if (graphs_) graphs_->reset();
}

bool ModelRunner::decode_graphs_for(int64_t batch) const {
  return graphs_ && graphs_->bucket_for(batch) > 0;
}

void ModelRunner::set_rope(StepContext& ctx, int64_t max_position) {
  torch::Tensor inv = inv_freq_;
  if (model_->config().rope.type == model::RopeType::kDynamic)
    inv = model::RotaryEmbedding(model_->config()).inv_freq(max_position + 1).to(device_);
  auto freqs = ctx.positions.to(torch::kFloat).unsqueeze(-1) * inv;  // (N, D/2), as transformers computes
  auto emb = torch::cat({freqs, freqs}, -1);
  auto dtype = model_->model->embed_tokens->weight.scalar_type();
  ctx.cos = (rope_scaling_ != 1.0 ? emb.cos() * rope_scaling_ : emb.cos()).to(dtype);
  ctx.sin = (rope_scaling_ != 1.0 ? emb.sin() * rope_scaling_ : emb.sin()).to(dtype);
}

torch::Tensor ModelRunner::forward_tokens(const torch::Tensor& ids, StepContext& ctx, const torch::Tensor& logits_rows) {
  auto& backbone = model_->model;
  ctx.fused_ops = fused_ops_;
  ctx.decode_linear = fused_ops_ && options_.decode_linear && ctx.num_decode == ids.size(0) &&
                      ids.size(0) <= kDecodeLinearMaxRows;
  torch::Tensor h = backbone->embed_tokens(ids), delta;  // the residual stream and its pending update
  for (std::size_t i = 0; i < backbone->layers->size(); ++i) {
    auto layer = backbone->layers[i]->as<model::DecoderLayerImpl>();
    delta = mixers_[i]->forward({h, delta, layer->input_layernorm, ctx}, ctx, *pool_, static_cast<int>(i));
    delta = mlp(layer->mlp, gate_up_[i], {h, delta, layer->post_attention_layernorm, ctx});
  }
  const torch::Tensor& w = model_->output_weight();
  const LayerInput last{h, delta, backbone->norm, ctx};
  if (!logits_rows.defined()) return last.linear(w, {}).to(torch::kFloat);
  // Row by row: selecting the rows after the norm is exact.
  return torch::nn::functional::linear(last.normed().index_select(0, logits_rows), w).to(torch::kFloat);
}

bool ModelRunner::refresh_weights() {
  bool moved = false;
  for (auto& m : mixers_) moved |= m->refresh_weights();
  for (auto& g : gate_up_) moved |= g.refresh();
  return moved;
}

torch::Tensor ModelRunner::upload(const std::vector<int64_t>& host) const {
  auto t = torch::tensor(host, torch::kLong);
  if (!device_.is_cuda()) return t.to(device_);
  return t.pin_memory().to(device_, /*non_blocking=*/true);
}

torch::Tensor ModelRunner::step(const std::vector<SeqWork>& works, const torch::Tensor& decode_ids) {
  MC_CHECK(!works.empty());
  torch::NoGradGuard no_grad;
  if (refresh_weights()) reset_graphs();  // the captured graphs read the old fused tensors
  const bool decode_only = std::all_of(works.begin(), works.end(), [](const SeqWork& w) {
    return w.count == 1 && w.cached > 0 && w.want_logits;
  });
  MC_CHECK(!decode_ids.defined() ||
           (decode_only && decode_ids.size(0) == static_cast<int64_t>(works.size())));
  if (graphs_ && decode_only && graphs_->bucket_for(static_cast<int64_t>(works.size())) > 0)
    return graph_step(works, decode_ids);
  return eager_step(works, decode_ids);
}

torch::Tensor ModelRunner::eager_step(const std::vector<SeqWork>& works, const torch::Tensor& decode_ids) {
  const int64_t bs = pool_->block_size();
  int64_t N = 0, D = 0, max_blocks = 1, max_ctx = 0, max_pos = 0, R = 0, extra = 0;
  for (const auto& w : works) {
    N += w.count;
    R += w.want_logits;
    max_pos = std::max(max_pos, w.cached + w.count - 1);
    if (w.count == 1 && w.cached > 0 && D == static_cast<int64_t>(&w - works.data())) {
      ++D;
      max_ctx = std::max(max_ctx, w.cached + 1);
      max_blocks = std::max(max_blocks, (w.cached + bs) / bs);
    } else if (w.cached > 0) {
      extra += w.cached + w.count;
    }
  }
  std::vector<int64_t> host;
  host.reserve(static_cast<std::size_t>(3 * N + D * (max_blocks + 1) + R + extra));
  for (const auto& w : works)
    for (int64_t p = w.cached; p < w.cached + w.count; ++p)
      host.push_back(decode_ids.defined() ? 0 : (*w.tokens)[static_cast<std::size_t>(p)]);
  for (const auto& w : works)
    for (int64_t p = w.cached; p < w.cached + w.count; ++p) host.push_back(p);
  for (const auto& w : works)
    for (int64_t p = w.cached; p < w.cached + w.count; ++p) host.push_back(slot_of(*w.cache, p, bs));
  for (int64_t i = 0; i < D; ++i) {
    const auto& blocks = works[static_cast<std::size_t>(i)].cache->blocks;
    for (int64_t j = 0; j < max_blocks; ++j)
      host.push_back(j < static_cast<int64_t>(blocks.size()) ? blocks[static_cast<std::size_t>(j)] : 0);
  }
  for (int64_t i = 0; i < D; ++i) host.push_back(works[static_cast<std::size_t>(i)].cached + 1);
  int64_t offset = 0;
  for (const auto& w : works) {
    offset += w.count;
    if (w.want_logits) host.push_back(offset - 1);
  }
  for (std::size_t i = static_cast<std::size_t>(D); i < works.size(); ++i)
    if (works[i].cached > 0)
      for (int64_t p = 0; p < works[i].cached + works[i].count; ++p) host.push_back(slot_of(*works[i].cache, p, bs));
  const int64_t prefill_max = device_.is_cuda() ? append_prefill_runs(works, D, host) : 0;

  Unpacker u{upload(host)};
  StepContext ctx;
  torch::Tensor ids = u.next(N);
  if (decode_ids.defined()) ids = decode_ids;
  ctx.positions = u.next(N);
  ctx.slots = u.next(N);
  ctx.num_decode = D;
  ctx.block_tables = u.next(D * max_blocks).view({D, max_blocks}).to(torch::kInt);
  ctx.context_lens = u.next(D).to(torch::kInt);
  ctx.max_context = max_ctx;
  ctx.use_decode_kernel = options_.cuda_decode_kernel;
  torch::Tensor rows = u.next(R);
  offset = 0;
  for (const auto& w : works) {
    StepContext::Seq s{offset, w.count, w.cached, w.cache->state_slot, {}};
    if (ctx.seqs.size() >= static_cast<std::size_t>(D) && w.cached > 0) s.context_slots = u.next(w.cached + w.count);
    ctx.seqs.push_back(std::move(s));
    offset += w.count;
  }
  if (prefill_max > 0) {
    ctx.prefill_cu_seqlens = u.next(static_cast<int64_t>(works.size()) - D + 1).to(torch::kInt);
    ctx.prefill_max_len = prefill_max;
  }
  set_rope(ctx, max_pos);
  // Every row samples (R == N: single-token works that all want logits): no selection, so a decode-only step
  // takes the same final norm + LM head path eagerly as in its graph.
  return forward_tokens(ids, ctx, R == N ? torch::Tensor() : rows);
}

torch::Tensor ModelRunner::graph_step(const std::vector<SeqWork>& works, const torch::Tensor& decode_ids) {
  const int64_t D = static_cast<int64_t>(works.size()), b = graphs_->bucket_for(D);
  const int64_t bs = pool_->block_size(), max_blocks = graphs_->max_blocks();
  // Layout (DecodeGraphs::run): ids b, positions b, slots b, context_lens b, block tables b * max_blocks.
  std::vector<int64_t> host(static_cast<std::size_t>(b * (4 + max_blocks)), 0);
  for (int64_t i = 0; i < b; ++i) {
    host[static_cast<std::size_t>(3 * b + i)] = 1;  // padding rows: context 1 on the null block
    if (i >= D) continue;
    const SeqWork& w = works[static_cast<std::size_t>(i)];
    if (!decode_ids.defined())
      host[static_cast<std::size_t>(i)] = (*w.tokens)[static_cast<std::size_t>(w.cached)];
    host[static_cast<std::size_t>(b + i)] = w.cached;
    host[static_cast<std::size_t>(2 * b + i)] = slot_of(*w.cache, w.cached, bs);
    host[static_cast<std::size_t>(3 * b + i)] = w.cached + 1;
    for (std::size_t j = 0; j < w.cache->blocks.size(); ++j)
      host[static_cast<std::size_t>(4 * b + i * max_blocks) + j] = w.cache->blocks[j];
  }
  ++graph_replays_;
  return graphs_->run(b, upload(host), decode_ids).narrow(0, 0, D);
}

}  // namespace musacoder::engine
