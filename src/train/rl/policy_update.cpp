#include "train/rl/policy_update.h"

#include "train/rl/token_logprob.h"

namespace musacoder::train::rl {
namespace mrl = ::musacoder::rl;

TokenBatch make_token_batch(const std::vector<RowTokens>& rows, const torch::Device& device) {
  TokenBatch b;
  b.rows = static_cast<int64_t>(rows.size());
  for (const auto& r : rows) b.cols = std::max<int64_t>(b.cols, static_cast<int64_t>(r.ids.size()) - 1);
  b.cols = std::max<int64_t>(b.cols, 1);
  const std::size_t cells = static_cast<std::size_t>(b.rows * b.cols);
  std::vector<int64_t> ids(cells, 0), index, targets;
  b.mask.assign(cells, 0);
  b.advantage.assign(cells, 0.0);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::size_t trained = 0;
    for (std::size_t t = 0; t + 1 < rows[r].ids.size(); ++t) {
      const std::size_t cell = r * static_cast<std::size_t>(b.cols) + t;
      ids[cell] = rows[r].ids[t];
      if (!rows[r].mask[t + 1]) continue;
      b.mask[cell] = 1;
      b.advantage[cell] = rows[r].advantage[t + 1];
      index.push_back(static_cast<int64_t>(cell));
      targets.push_back(rows[r].ids[t + 1]);
      ++trained;
    }
    b.tokens.push_back(trained);
  }
  auto i64 = torch::TensorOptions().dtype(torch::kLong);
  b.input_ids = torch::tensor(ids, i64).view({b.rows, b.cols}).to(device);
  b.index = torch::tensor(index, i64).to(device);
  b.targets = torch::tensor(targets, i64).to(device);
  return b;
}

std::vector<double> to_grid(const RowValues& v, const TokenBatch& batch) {
  std::vector<double> g(static_cast<std::size_t>(batch.rows * batch.cols), 0.0);
  for (std::size_t r = 0; r < v.size(); ++r) {
    for (std::size_t t = 0; t < v[r].size(); ++t) g[r * static_cast<std::size_t>(batch.cols) + t] = v[r][t];
  }
  return g;
}

std::vector<std::vector<std::size_t>> micro_batches(const std::vector<RowTokens>& rows, int64_t budget) {
  std::vector<std::vector<std::size_t>> groups;
  int64_t longest = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int64_t len = std::max<int64_t>(static_cast<int64_t>(rows[i].ids.size()) - 1, 1);
    const int64_t widest = std::max(longest, len);
    if (groups.empty() || widest * static_cast<int64_t>(groups.back().size() + 1) > budget) {
      groups.emplace_back();
      longest = len;
    } else {
      longest = widest;
    }
    groups.back().push_back(i);
  }
  return groups;
}

namespace {

// The trained positions' hidden states (N, C) of a forward over the batch.
torch::Tensor trained_hidden(model::Decoder& model, const TrainingForward& forward, const TokenBatch& batch,
                             bool checkpoint) {
  model::ForwardInput in;
  in.input_ids = batch.input_ids;
  torch::Tensor h = forward.hidden(model, in, checkpoint);
  return h.reshape({batch.rows * batch.cols, h.size(2)}).index_select(0, batch.index);
}

// (N) float32 values at the trained positions → per-row vectors (0 elsewhere), appended to `out`.
void scatter_rows(const torch::Tensor& values, const TokenBatch& batch, RowValues& out) {
  torch::Tensor v = values.to(torch::kCPU, torch::kDouble).contiguous();
  torch::Tensor idx = batch.index.to(torch::kCPU).contiguous();
  const std::size_t first = out.size();
  out.resize(first + static_cast<std::size_t>(batch.rows),
             std::vector<double>(static_cast<std::size_t>(batch.cols)));
  const double* pv = v.data_ptr<double>();
  const int64_t* pi = idx.data_ptr<int64_t>();
  for (int64_t n = 0; n < idx.numel(); ++n) {
    out[first + static_cast<std::size_t>(pi[n] / batch.cols)][static_cast<std::size_t>(pi[n] % batch.cols)] =
        pv[n];
  }
}

torch::Device device_of(model::Decoder& model) {
  return model->parameters().front().device();
}

}  // namespace

RowValues score_rows(model::Decoder& model, const TrainingForward& forward,
                     const std::vector<RowTokens>& rows, const ForwardShape& shape, RowValues* entropy) {
  torch::NoGradGuard no_grad;
  RowValues out;
  if (entropy) entropy->clear();
  for (const auto& group : micro_batches(rows, shape.micro_batch_tokens)) {
    const TokenBatch mb = make_token_batch(pick(rows, group), device_of(model));
    torch::Tensor h = trained_hidden(model, forward, mb, /*checkpoint=*/false);
    torch::Tensor ent;
    torch::Tensor logp =
        token_logprobs(h, model->output_weight(), mb.targets, shape.chunk_rows, entropy ? &ent : nullptr);
    if (entropy) scatter_rows(ent, mb, *entropy);
    scatter_rows(logp, mb, out);
  }
  return out;
}

Result<LossStats> backward_policy_loss(model::Decoder& model, const TrainingForward& forward,
                                       const std::vector<RowTokens>& rows, const TokenBatch& batch,
                                       const RowValues& logp, const RowValues& old_logp,
                                       const RowValues& ref_logp, const mrl::PolicyLossOptions& options,
                                       const ForwardShape& shape) {
  const std::vector<double> cur = to_grid(logp, batch), old = to_grid(old_logp, batch);
  const std::vector<double> ref = ref_logp.empty() ? std::vector<double>() : to_grid(ref_logp, batch);
  mrl::PolicyLossInputs in{{static_cast<std::size_t>(batch.rows), static_cast<std::size_t>(batch.cols)},
                           cur,
                           old,
                           ref,
                           batch.advantage,
                           batch.mask};
  auto out = mrl::policy_loss(in, options);
  if (!out.ok()) return invalid_argument("policy loss: " + out.status().message());
  const std::vector<double>& grad = out.value().grad_logp;  // (B,T) of the whole batch
  for (const auto& group : micro_batches(rows, shape.micro_batch_tokens)) {
    const TokenBatch mb = make_token_batch(pick(rows, group), device_of(model));
    if (mb.index.numel() == 0) continue;
    std::vector<double> g;  // ∂loss/∂logp at the group's trained positions, in its index order
    torch::Tensor idx = mb.index.to(torch::kCPU).contiguous();
    for (int64_t n = 0; n < idx.numel(); ++n) {
      const int64_t cell = idx.data_ptr<int64_t>()[n];
      g.push_back(
          grad[group[static_cast<std::size_t>(cell / mb.cols)] * static_cast<std::size_t>(batch.cols) +
               static_cast<std::size_t>(cell % mb.cols)]);
    }
    torch::Tensor h = trained_hidden(model, forward, mb, shape.checkpoint);
    torch::Tensor weights =
        torch::tensor(g, torch::TensorOptions().dtype(torch::kDouble)).to(h.device(), torch::kFloat);
    weighted_logprob_sum(h, model->output_weight(), mb.targets, weights, shape.chunk_rows).backward();
  }
  return LossStats{out.value().loss, out.value().pg_loss, out.value().kl, out.value().clip_fraction};
}

}  // namespace musacoder::train::rl
