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

namespace {

// The trained positions' hidden states (N, C) of a forward over the batch.
torch::Tensor trained_hidden(model::Decoder& model, const TrainingForward& forward, const TokenBatch& batch) {
  model::ForwardInput in;
  in.input_ids = batch.input_ids;
  torch::Tensor h = forward.hidden(model, in, /*checkpoint=*/false);
  return h.reshape({batch.rows * batch.cols, h.size(2)}).index_select(0, batch.index);
}

// (N) float32 values at the trained positions → per-row vectors (0 elsewhere).
RowValues scatter_rows(const torch::Tensor& values, const TokenBatch& batch) {
  torch::Tensor v = values.to(torch::kCPU, torch::kDouble).contiguous();
  torch::Tensor idx = batch.index.to(torch::kCPU).contiguous();
  RowValues out(static_cast<std::size_t>(batch.rows));
  for (int64_t r = 0; r < batch.rows; ++r) out[static_cast<std::size_t>(r)].assign(static_cast<std::size_t>(batch.cols), 0.0);
  const double* pv = v.data_ptr<double>();
  const int64_t* pi = idx.data_ptr<int64_t>();
  for (int64_t n = 0; n < idx.numel(); ++n) {
    out[static_cast<std::size_t>(pi[n] / batch.cols)][static_cast<std::size_t>(pi[n] % batch.cols)] = pv[n];
  }
  return out;
}

}  // namespace

RowValues score_rows(model::Decoder& model, const TrainingForward& forward, const TokenBatch& batch,
                     int64_t chunk_rows, RowValues* entropy) {
  torch::NoGradGuard no_grad;
  torch::Tensor h = trained_hidden(model, forward, batch);
  torch::Tensor ent;
  torch::Tensor logp = token_logprobs(h, model->output_weight(), batch.targets, chunk_rows, entropy ? &ent : nullptr);
  if (entropy) *entropy = scatter_rows(ent, batch);
  return scatter_rows(logp, batch);
}

Result<LossStats> backward_policy_loss(model::Decoder& model, const TrainingForward& forward,
                                       const TokenBatch& batch, const RowValues& old_logp, const RowValues& ref_logp,
                                       const mrl::PolicyLossOptions& options, int64_t chunk_rows) {
  torch::Tensor h = trained_hidden(model, forward, batch);
  torch::Tensor w = model->output_weight();
  const RowValues logp_rows = scatter_rows(token_logprobs(h.detach(), w.detach(), batch.targets, chunk_rows), batch);
  const std::vector<double> logp = to_grid(logp_rows, batch), old = to_grid(old_logp, batch);
  const std::vector<double> ref = ref_logp.empty() ? std::vector<double>() : to_grid(ref_logp, batch);
  mrl::PolicyLossInputs in{{static_cast<std::size_t>(batch.rows), static_cast<std::size_t>(batch.cols)},
                           logp, old, ref, batch.advantage, batch.mask};
  auto out = mrl::policy_loss(in, options);
  if (!out.ok()) return invalid_argument("policy loss: " + out.status().message());
  std::vector<double> g;  // ∂loss/∂logp at the trained positions, in index order
  torch::Tensor idx = batch.index.to(torch::kCPU).contiguous();
  for (int64_t n = 0; n < idx.numel(); ++n) g.push_back(out.value().grad_logp[static_cast<std::size_t>(idx.data_ptr<int64_t>()[n])]);
  torch::Tensor weights = torch::tensor(g, torch::TensorOptions().dtype(torch::kDouble)).to(h.device(), torch::kFloat);
  if (idx.numel() > 0) weighted_logprob_sum(h, w, batch.targets, weights, chunk_rows).backward();
  return LossStats{out.value().loss, out.value().pg_loss, out.value().kl, out.value().clip_fraction};
}

}  // namespace musacoder::train::rl
