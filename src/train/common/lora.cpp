#include "train/common/lora.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "model/safetensors.h"

namespace musacoder::train {
namespace {

const std::vector<std::string> kAllLinear = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};

std::vector<std::pair<std::string, torch::nn::Linear*>> projections(model::DecoderLayerImpl& l) {
  return {{"self_attn.q_proj", &l.self_attn->q_proj}, {"self_attn.k_proj", &l.self_attn->k_proj},
          {"self_attn.v_proj", &l.self_attn->v_proj}, {"self_attn.o_proj", &l.self_attn->o_proj},
          {"mlp.gate_proj", &l.mlp->gate_proj},       {"mlp.up_proj", &l.mlp->up_proj},
          {"mlp.down_proj", &l.mlp->down_proj}};
}

std::string peft_key(const std::string& module, const char* ab) {
  return "base_model.model." + module + ".lora_" + ab + ".weight";
}

Result<std::vector<std::string>> resolve_targets(const std::vector<std::string>& targets) {
  std::vector<std::string> out;
  for (const auto& t : targets) {
    if (t == "all-linear") return kAllLinear;
    if (std::find(kAllLinear.begin(), kAllLinear.end(), t) == kAllLinear.end()) {
      return invalid_argument("unknown LoRA target '" + t +
                              "' (q_proj k_proj v_proj o_proj gate_proj up_proj down_proj, or all-linear)");
    }
    out.push_back(t);
  }
  if (out.empty()) return invalid_argument("--lora-targets names no projection");
  return out;
}

}  // namespace

Result<LoraAdapters> LoraAdapters::attach(model::Decoder& decoder, const LoraOptions& options, uint64_t seed) {
  if (options.rank <= 0) return invalid_argument("--lora-rank must be positive");
  auto targets = resolve_targets(options.targets);
  if (!targets.ok()) return targets.status();
  LoraAdapters lora;
  lora.options_ = options;
  lora.options_.targets = *targets;
  lora.scale_ = options.alpha / static_cast<double>(options.rank);
  for (auto& p : decoder->parameters()) p.set_requires_grad(false);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  torch::nn::ModuleList layers = decoder->model->layers;
  for (std::size_t i = 0; i < layers->size(); ++i) {
    for (auto& [path, linear] : projections(*layers[i]->as<model::DecoderLayerImpl>())) {
      const std::string leaf = path.substr(path.find('.') + 1);
      if (std::find(targets->begin(), targets->end(), leaf) == targets->end()) continue;
      Adapter ad;
      ad.module = "model.layers." + std::to_string(i) + "." + path;
      ad.layer = static_cast<int64_t>(i);
      ad.linear = linear->get();
      ad.base = ad.linear->weight;
      const int64_t out = ad.base.size(0), in = ad.base.size(1);
      const double bound = 1.0 / std::sqrt(static_cast<double>(in));  // kaiming_uniform_(a=sqrt(5))
      torch::Tensor a = torch::empty({options.rank, in}).uniform_(-bound, bound, gen);
      auto f32 = ad.base.options().dtype(torch::kFloat);
      ad.a = a.to(f32).requires_grad_(true);
      ad.b = torch::zeros({out, options.rank}, f32).requires_grad_(true);
      lora.adapters_.push_back(std::move(ad));
    }
  }
  if (lora.adapters_.empty()) return invalid_argument("--lora-targets matched no projection of the model");
  return lora;
}

std::vector<std::pair<std::string, torch::Tensor>> LoraAdapters::named_parameters() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& ad : adapters_) {
    out.emplace_back(peft_key(ad.module, "A"), ad.a);
    out.emplace_back(peft_key(ad.module, "B"), ad.b);  // the trainable leaves themselves (optimizer, load_peft)
  }
  return out;
}

void LoraAdapters::materialize_layer(int64_t layer) {
  for (auto& ad : adapters_) {
    if (ad.layer != layer) continue;
    ad.linear->weight = ad.base + (ad.b.matmul(ad.a) * scale_).to(ad.base.scalar_type());
  }
}

void LoraAdapters::restore() {
  for (auto& ad : adapters_) ad.linear->weight = ad.base;
}

void LoraAdapters::merge() {
  torch::NoGradGuard no_grad;
  restore();
  for (auto& ad : adapters_) {
    ad.base.add_((ad.b.matmul(ad.a) * scale_).to(ad.base.scalar_type()));
    ad.b.zero_();
  }
}

Status LoraAdapters::save_peft(const std::filesystem::path& dir, const std::string& base_model) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return internal_error(dir.string() + ": cannot create directory: " + ec.message());
  nlohmann::json config = {{"peft_type", "LORA"}, {"task_type", "CAUSAL_LM"}, {"r", options_.rank},
                           {"lora_alpha", options_.alpha}, {"lora_dropout", 0.0}, {"bias", "none"},
                           {"target_modules", options_.targets}, {"fan_in_fan_out", false},
                           {"inference_mode", true}, {"use_rslora", false}, {"use_dora", false},
                           {"init_lora_weights", true}, {"modules_to_save", nullptr},
                           {"base_model_name_or_path", base_model}};
  try {
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto& [name, t] : named_parameters()) tensors.emplace_back(name, t.detach().to(torch::kCPU));
    MC_RETURN_IF_ERROR(model::write_safetensors(dir / "adapter_model.safetensors", tensors));
  } catch (const std::exception& e) {
    return internal_error("saving the LoRA adapter: " + std::string(e.what()));
  }
  return write_file_atomic(dir / "adapter_config.json", config.dump(2) + "\n");
}

Status LoraAdapters::load_peft(const std::filesystem::path& dir) {
  auto file = model::SafetensorsFile::open(dir / "adapter_model.safetensors");
  if (!file.ok()) return file.status();
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : named_parameters()) {
    auto stored = (*file)->tensor(name);
    if (!stored.ok()) return invalid_argument(dir.string() + ": adapter has no tensor " + name);
    if (stored->sizes() != t.sizes()) return invalid_argument(dir.string() + ": adapter tensor " + name + " has another shape");
    t.copy_(*stored);
  }
  return {};
}

}  // namespace musacoder::train
