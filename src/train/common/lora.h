// LoRA adapters on a Decoder's linear projections, trained while the base weights stay frozen.
//
// For a target projection y = x Wᵀ (+ b), W (out, in): A (r, in) ~ kaiming-uniform(a=√5) as in PEFT, B (out, r) = 0,
// scale = alpha / r, and the adapted projection is y = x (W + scale · B A)ᵀ (+ b). The Decoder is not modified: the
// projection's `weight` member (what LinearImpl::forward reads) is pointed at the merged tensor W + scale·B·A
// before its layer runs (materialize_layer, a TrainingForward hook, so under activation checkpointing only one
// layer's merged weights exist at a time) and back at W by restore(). Its registered parameter stays W, so
// named_parameters() and save_pretrained see the base weights.
// Saving: PEFT's format (adapter_config.json + adapter_model.safetensors with keys
// "base_model.model.<module>.lora_A.weight" / "lora_B.weight"), which peft.PeftModel.from_pretrained loads; or
// merged into the base weights (merge()) and saved as a full checkpoint.
// Thread-safety: none.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "model/decoder.h"

namespace musacoder::train {

struct LoraOptions {
  int64_t rank = 0;         // 0: no LoRA (full fine-tuning)
  double alpha = 16.0;      // scale = alpha / rank
  // Projection names (the last component of the module path): q_proj k_proj v_proj o_proj gate_proj up_proj
  // down_proj; "all-linear" selects all seven.
  std::vector<std::string> targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
};

class LoraAdapters {
 public:
  // Adds adapters to every targeted projection of `decoder`, freezes every base parameter and places A/B on the
  // decoder's device in float32 (fp32 adapters regardless of the base dtype). `seed` fixes A's initialisation.
  static Result<LoraAdapters> attach(model::Decoder& decoder, const LoraOptions& options, uint64_t seed);

  // The trainable tensors with their PEFT names ("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight").
  std::vector<std::pair<std::string, torch::Tensor>> named_parameters() const;
  // Points the projections of layer `layer` at W + scale·B·A (in the base dtype, differentiable in A and B).
  void materialize_layer(int64_t layer);
  // Points every projection back at its base weight W.
  void restore();
  // W ← W + scale·B·A for every adapter (then B = 0 keeps the model's function, so saving stays consistent).
  void merge();

  // adapter_config.json + adapter_model.safetensors into `dir` (created). base_model is recorded as given.
  Status save_peft(const std::filesystem::path& dir, const std::string& base_model) const;
  // Loads A and B from a PEFT directory written by save_peft (same targets and rank).
  Status load_peft(const std::filesystem::path& dir);

 private:
  struct Adapter {
    std::string module;  // "model.layers.0.self_attn.q_proj"
    int64_t layer = 0;
    torch::nn::LinearImpl* linear = nullptr;
    torch::Tensor base, a, b;
  };
  LoraOptions options_;
  double scale_ = 1.0;
  std::vector<Adapter> adapters_;
};

}  // namespace musacoder::train
