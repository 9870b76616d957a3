#include "train/sft/batch.h"

#include <algorithm>

#include "train/common/lm_loss.h"

namespace musacoder::train::sft {

MicroBatch make_micro_batch(const std::vector<SftExample>& data, const MicroBatchPlan& plan,
                            const torch::Device& device) {
  const auto B = static_cast<int64_t>(plan.rows.size());
  int64_t T = 1;
  bool packed = false;
  for (const auto& r : plan.rows) {
    T = std::max(T, r.tokens);
    packed = packed || r.examples.size() > 1;
  }
  torch::Tensor ids = torch::zeros({B, T}, torch::kLong), seq = torch::zeros({B, T}, torch::kLong);
  auto id = ids.accessor<int64_t, 2>();
  auto sq = seq.accessor<int64_t, 2>();
  std::vector<int64_t> positions, targets;
  MicroBatch mb;
  for (int64_t b = 0; b < B; ++b) {
    const PackedRow& row = plan.rows[static_cast<std::size_t>(b)];
    int64_t t = 0;
    for (std::size_t k = 0; k < row.examples.size(); ++k) {
      const SftExample& ex = data[static_cast<std::size_t>(row.examples[k])];
      const auto L = static_cast<int64_t>(ex.ids.size());
      for (int64_t i = 0; i < L; ++i) {
        id[b][t + i] = ex.ids[static_cast<std::size_t>(i)];
        sq[b][t + i] = static_cast<int64_t>(k);
        if (i + 1 < L && ex.trained[static_cast<std::size_t>(i + 1)]) {
          positions.push_back(b * T + t + i);
          targets.push_back(ex.ids[static_cast<std::size_t>(i + 1)]);
        }
      }
      t += L;
    }
    for (int64_t i = t; i < T; ++i) sq[b][i] = static_cast<int64_t>(row.examples.size());
    mb.tokens += t;
  }
  // Pinned host memory makes the copies truly asynchronous on CUDA.
  auto place = [&](const torch::Tensor& t) {
    return device.is_cuda() ? t.pin_memory().to(torch::TensorOptions().device(device), /*non_blocking=*/true)
                            : t.to(device);
  };
  mb.input_ids = place(ids);
  if (packed) mb.sequence_ids = place(seq);
  mb.positions = place(torch::tensor(positions, torch::kLong));
  mb.targets = place(torch::tensor(targets, torch::kLong));
  mb.trained_tokens = static_cast<int64_t>(positions.size());
  return mb;
}

torch::Tensor micro_batch_loss_sum(model::Decoder& decoder, const TrainingForward& forward, const MicroBatch& batch,
                                   const LossOptions& options, const TrainingForward::LayerHook& before_layer) {
  model::ForwardInput in;
  in.input_ids = batch.input_ids;
  in.sequence_ids = batch.sequence_ids;
  torch::Tensor h = forward.hidden(decoder, in, options.gradient_checkpointing, before_layer);
  h = h.reshape({-1, h.size(-1)}).index_select(0, batch.positions);
  const torch::Tensor w = decoder->output_weight();
  const int64_t chunk = options.chunk_rows > 0 ? options.chunk_rows : lm_loss_chunk_rows(w.size(0));
  return chunked_lm_cross_entropy(h, w, batch.targets, chunk);
}

}  // namespace musacoder::train::sft
