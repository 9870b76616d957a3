// Checkpoint directories of a training run and the state that makes a resumed run equal an uninterrupted one.
//
//   <output_dir>/musacoder_run.json          the run's marker (command and resolved configuration)
//   <output_dir>/checkpoint-<step>/          one per save: a Hugging Face model directory (config.json,
//       model.safetensors[.index.json] or a PEFT adapter, tokenizer files, chat template) plus
//       training_state/trainer_state.json    step, epoch, data position, seed, resolved config, metrics so far
//       training_state/optimizer-rank<r>-of-<n>.safetensors   AdamW moments, step counters, fp32 masters (ZeRO-1:
//                                            each rank's own shard)
//       training_state/rng.safetensors       torch's default generators (CPU, and CUDA when used)
// A checkpoint is written into <output_dir>/.tmp-checkpoint-<step>/ and renamed into place only when complete,
// so a failed save (disk full, crash) never replaces or damages an earlier checkpoint.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace musacoder::train {

inline constexpr const char* kRunMarker = "musacoder_run.json";

// kFailedPrecondition when `output_dir` holds another run (a marker, checkpoints or model weights), unless
// `overwrite` — then those entries are removed. Creates the directory.
Status prepare_output_dir(const std::filesystem::path& output_dir, bool overwrite);

std::filesystem::path checkpoint_dir(const std::filesystem::path& output_dir, int64_t step);
// A fresh (emptied) temporary directory for the checkpoint of `step`.
Result<std::filesystem::path> begin_checkpoint(const std::filesystem::path& output_dir, int64_t step);
// Renames the temporary directory to checkpoint-<step> (replacing one of the same step), then removes the oldest
// checkpoints beyond `keep_last` (0: keep all).
Status commit_checkpoint(const std::filesystem::path& tmp, const std::filesystem::path& output_dir, int64_t step,
                         int64_t keep_last);
// The checkpoint directory to resume from: `path` itself when it is a checkpoint, else its newest checkpoint-<N>.
Result<std::filesystem::path> resolve_checkpoint(const std::filesystem::path& path);

// Copies tokenizer.json, tokenizer_config.json, special_tokens_map.json, vocab/merges, chat_template.jinja and
// generation_config.json when present in `from`.
Status copy_tokenizer_files(const std::filesystem::path& from, const std::filesystem::path& to);

// Named tensors to/from one safetensors file (CPU copies are written; loading gives CPU tensors).
Status save_tensors(const std::filesystem::path& file, const std::vector<std::pair<std::string, torch::Tensor>>& t);
Result<std::map<std::string, torch::Tensor>> load_tensors(const std::filesystem::path& file);

// The default generators' states ("cpu", "cuda:<i>") and their restoration.
std::vector<std::pair<std::string, torch::Tensor>> rng_state(const torch::Device& device);
Status restore_rng_state(const std::map<std::string, torch::Tensor>& state, const torch::Device& device);

std::filesystem::path optimizer_state_file(const std::filesystem::path& checkpoint, int rank, int world_size);

}  // namespace musacoder::train
