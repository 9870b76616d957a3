// Hugging Face checkpoint directories in and out: config.json + model.safetensors (or shards with
// model.safetensors.index.json). Library exceptions (libtorch, JSON) stop here and become Status.
//
// load_model() dispatches on config.json's model_type: qwen2 / qwen3 / llama -> Decoder, qwen3_5 /
// qwen3_5_text -> Qwen35. The Qwen3.5 hybrid reads both namings: "model.language_model.*" (the released
// Qwen3_5ForConditionalGeneration checkpoints; model.visual.* and mtp.* are skipped, listed in the
// LoadReport, and carried through to save_model unchanged) and the text-only "model.*" naming
// (Qwen3_5ForCausalLM). save_model writes the naming that config.json's model_type implies, so
// transformers' from_pretrained of the same class reloads it.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/causal_lm.h"
#include "model/decoder.h"
#include "model/options.h"
#include "model/qwen3_5.h"
#include "model/safetensors.h"

namespace musacoder::model {

// What a load left out of the model.
struct LoadReport {
  std::vector<std::string> skipped;  // checkpoint tensors not used by the model (model.visual.*, mtp.*)
};

// Any supported checkpoint, placed per `options`. `report` (optional) receives the skipped tensors.
Result<std::shared_ptr<CausalLm>> load_model(const std::filesystem::path& dir, const ModelOptions& options = {},
                                             LoadReport* report = nullptr);
// config.json + weights in the checkpoint's own naming (see above), as save_pretrained.
Status save_model(CausalLm& model, const std::filesystem::path& dir, const ModelOptions& options = {});

// The family-specific model behind a CausalLm (for incremental decoding); null when it is the other one.
std::shared_ptr<DecoderImpl> as_decoder(const std::shared_ptr<CausalLm>& model);
std::shared_ptr<Qwen35Impl> as_qwen35(const std::shared_ptr<CausalLm>& model);

// The Qwen3.5 hybrid: config.json + weights, either naming.
Result<Qwen35> load_qwen35(const std::filesystem::path& dir, const ModelOptions& options = {},
                          LoadReport* report = nullptr);
Status load_weights(Qwen35& model, const SafetensorsCheckpoint& checkpoint, LoadReport* report = nullptr);

// Resolves ModelOptions::dtype ("auto" -> bf16 on CUDA, fp32 on CPU) for `device`.
Result<torch::ScalarType> resolve_dtype(const std::string& dtype, const torch::Device& device);

// Copies every parameter of `model` from `checkpoint`, converting dtype and device. Fails, changing
// nothing visible to a caller that drops the model, when a tensor is missing, unexpected or of the wrong
// shape; the message lists every such tensor. A tied model ignores a stored lm_head.weight, and the
// non-persistent rotary buffers some old checkpoints carry ("...rotary_emb.inv_freq") are ignored.
Status load_weights(Decoder& model, const SafetensorsCheckpoint& checkpoint);

// config.json + weights from `dir`, placed per `options` (device, dtype). A dense family only (qwen2,
// qwen3, llama); a qwen3_5 checkpoint gets kInvalidArgument pointing to load_model().
Result<Decoder> load_pretrained(const std::filesystem::path& dir, const ModelOptions& options = {});

// Writes config.json and the weights (sharded above options.max_shard_bytes) into `dir` (created when
// missing), in options.save_dtype or the parameters' dtype. transformers' from_pretrained loads the result.
Status save_pretrained(Decoder& model, const std::filesystem::path& dir, const ModelOptions& options = {});

}  // namespace musacoder::model
