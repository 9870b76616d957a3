// A micro-batch as tensors, and its loss. Built on the host from a MicroBatchPlan (packing.h):
//   input_ids    (B, T) int64   B = rows, T = longest row; shorter rows are padded at the end with token 0
//   sequence_ids (B, T) int64   example number within its row (padding: one more); undefined when no row holds
//                               more than one example (plain causal attention then covers everything, and the
//                               attention kernels can use their fast causal paths)
//   positions    (M)    int64   flat indexes b·T + t of the positions that predict a trained token
//   targets      (M)    int64   the token each of those positions predicts (input_ids[b, t + 1])
// No position predicts across an example boundary, so packed examples never see or train on each other.
#pragma once

#include <torch/torch.h>

#include "model/decoder.h"
#include "train/common/forward.h"
#include "train/sft/dataset.h"
#include "train/sft/packing.h"

namespace musacoder::train::sft {

struct MicroBatch {
  torch::Tensor input_ids, sequence_ids, positions, targets;
  int64_t tokens = 0;          // real (non-padding) tokens
  int64_t trained_tokens = 0;  // = positions.numel()
};

// Requires the plan's examples to exist in `data`. Tensors are placed on `device` (copies are non-blocking).
MicroBatch make_micro_batch(const std::vector<SftExample>& data, const MicroBatchPlan& plan,
                            const torch::Device& device);

struct LossOptions {
  bool gradient_checkpointing = false;
  int64_t chunk_rows = 0;  // chunked cross-entropy rows per chunk; 0: lm_loss_chunk_rows(vocab)
};

// Σ over the micro-batch's trained positions of −log p(target) (float32 scalar): the un-normalised loss. The
// trainers divide by the step's trained-token count over all micro-batches and ranks, so that the gradient
// equals that of the mean over the whole (global) batch however it is split.
torch::Tensor micro_batch_loss_sum(model::Decoder& decoder, const TrainingForward& forward, const MicroBatch& batch,
                                   const LossOptions& options, const TrainingForward::LayerHook& before_layer = {});

}  // namespace musacoder::train::sft
