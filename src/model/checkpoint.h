// Hugging Face checkpoint directories in and out: config.json + model.safetensors (or shards with
// model.safetensors.index.json). Library exceptions (libtorch, JSON) stop here and become Status.
#pragma once

#include <filesystem>

#include "core/status.h"
#include "model/decoder.h"
#include "model/options.h"
#include "model/safetensors.h"

namespace musacoder::model {

// Resolves ModelOptions::dtype ("auto" -> bf16 on CUDA, fp32 on CPU) for `device`.
Result<torch::ScalarType> resolve_dtype(const std::string& dtype, const torch::Device& device);

// Copies every parameter of `model` from `checkpoint`, converting dtype and device. Fails, changing
// nothing visible to a caller that drops the model, when a tensor is missing, unexpected or of the wrong
// shape; the message lists every such tensor. A tied model ignores a stored lm_head.weight, and the
// non-persistent rotary buffers some old checkpoints carry ("...rotary_emb.inv_freq") are ignored.
Status load_weights(Decoder& model, const SafetensorsCheckpoint& checkpoint);

// config.json + weights from `dir`, placed per `options` (device, dtype).
Result<Decoder> load_pretrained(const std::filesystem::path& dir, const ModelOptions& options = {});

// Writes config.json and the weights (sharded above options.max_shard_bytes) into `dir` (created when
// missing), in options.save_dtype or the parameters' dtype. transformers' from_pretrained loads the result.
Status save_pretrained(Decoder& model, const std::filesystem::path& dir, const ModelOptions& options = {});

}  // namespace musacoder::model
