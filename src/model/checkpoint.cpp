#include "model/checkpoint.h"

#include <functional>
#include <set>
#include <sstream>

#include "core/files.h"

namespace musacoder::model {
namespace {

std::string shape_string(c10::IntArrayRef s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

Result<torch::ScalarType> parse_dtype(const std::string& name) {
  if (name == "bfloat16" || name == "bf16") return torch::kBFloat16;
  if (name == "float16" || name == "fp16" || name == "half") return torch::kHalf;
  if (name == "float32" || name == "fp32" || name == "float") return torch::kFloat;
  return invalid_argument("unknown dtype '" + name + "' (bfloat16, float16, float32 or auto)");
}

const char* hf_dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kBFloat16:
      return "bfloat16";
    case torch::kHalf:
      return "float16";
    default:
      return "float32";
  }
}

// How a model's parameter names meet a checkpoint's tensor names.
struct Naming {
  std::function<std::string(const std::string&)> to_checkpoint;  // parameter name -> tensor name
  std::function<bool(const std::string&)> unused;                  // tensor the model does not take
};

std::string list_problems(const std::string& arch, const std::vector<std::string>& missing,
                          const std::vector<std::string>& unexpected, const std::vector<std::string>& mismatched) {
  std::string msg = "checkpoint does not match the " + arch + " model built from config.json:";
  auto list = [&](const char* what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    msg += std::string("\n  ") + what + " (" + std::to_string(v.size()) + "):";
    for (std::size_t i = 0; i < v.size() && i < 20; ++i) msg += " " + v[i];
    if (v.size() > 20) msg += " ...";
  };
  list("missing", missing);
  list("unexpected", unexpected);
  list("shape mismatch", mismatched);
  return msg;
}

Status load_named_or_throw(torch::nn::Module& module, const ModelConfig& config, const SafetensorsCheckpoint& ck,
                           const Naming& naming, std::vector<std::string>* skipped) {
  std::vector<std::string> missing, unexpected, mismatched;
  std::set<std::string> expected;
  auto params = module.named_parameters(/*recurse=*/true);
  for (const auto& p : params) {
    const std::string name = naming.to_checkpoint(p.key());
    expected.insert(name);
    if (!ck.contains(name)) {
      missing.push_back(name);
      continue;
    }
    auto e = ck.entry(name);
    if (!e.ok()) return e.status();
    if (c10::IntArrayRef(e->shape) != p.value().sizes()) {
      mismatched.push_back(name + " (checkpoint " + shape_string(e->shape) + ", model " +
                           shape_string(p.value().sizes()) + ")");
    }
  }
  for (const auto& name : ck.names()) {
    if (expected.count(name)) continue;
    if (name == "lm_head.weight" && config.tie_word_embeddings) continue;
    if (name.size() > 22 && name.ends_with("rotary_emb.inv_freq")) continue;
    if (naming.unused && naming.unused(name)) {
      if (skipped != nullptr) skipped->push_back(name);
      continue;
    }
    unexpected.push_back(name);
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    return invalid_argument(list_problems(architecture_name(config.architecture), missing, unexpected, mismatched));
  }
  torch::NoGradGuard no_grad;
  for (auto& p : params) {
    auto t = ck.tensor(naming.to_checkpoint(p.key()));
    if (!t.ok()) return t.status();
    p.value().copy_(*t);
  }
  return {};
}

Naming identity_naming() {
  return {[](const std::string& n) { return n; }, nullptr};
}

// Qwen3.5: "model.X" <-> "model.language_model.X" when the checkpoint is VLM-wrapped; the vision tower
// and the multi-token-prediction head are not part of the text model.
Naming qwen35_naming(bool wrapped) {
  Naming n;
  n.to_checkpoint = [wrapped](const std::string& name) {
    if (wrapped && name.starts_with("model.")) return "model.language_model." + name.substr(6);
    return name;
  };
  n.unused = [](const std::string& name) { return name.starts_with("model.visual.") || name.starts_with("mtp."); };
  return n;
}

bool checkpoint_is_wrapped(const SafetensorsCheckpoint& ck) {
  return ck.contains("model.language_model.embed_tokens.weight");
}

Result<torch::Device> checked_device(const ModelOptions& options) {
  torch::Device device(options.device);
  if (device.is_cuda() && !torch::cuda::is_available()) {
    return unavailable("device '" + options.device + "' requested but CUDA is not available to libtorch");
  }
  return device;
}

// Writes config.json for `config` and the tensors, in options.save_dtype or their own dtype.
Status save_tensors(std::vector<std::pair<std::string, torch::Tensor>> tensors, ModelConfig config,
                    const std::filesystem::path& dir, const ModelOptions& options, std::size_t converted) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return internal_error(dir.string() + ": cannot create directory: " + ec.message());
  std::optional<torch::ScalarType> out_dtype;
  if (!options.save_dtype.empty()) {
    auto d = parse_dtype(options.save_dtype);
    if (!d.ok()) return d.status();
    out_dtype = *d;
  }
  torch::ScalarType written = torch::kFloat;
  for (std::size_t i = 0; i < converted && i < tensors.size(); ++i) {  // the model's own tensors
    torch::Tensor& t = tensors[i].second;
    t = t.detach();
    if (out_dtype) t = t.to(*out_dtype);
    written = t.scalar_type();
  }
  config.torch_dtype = hf_dtype_name(written);
  MC_RETURN_IF_ERROR(write_file_atomic(dir / "config.json", to_json(config).dump(2) + "\n"));
  return write_safetensors_dir(dir, tensors, options.max_shard_bytes);
}

}  // namespace

Result<torch::ScalarType> resolve_dtype(const std::string& dtype, const torch::Device& device) {
  if (dtype == "auto" || dtype.empty()) return device.is_cuda() ? torch::kBFloat16 : torch::kFloat;
  return parse_dtype(dtype);
}

Status load_weights(Decoder& model, const SafetensorsCheckpoint& checkpoint) {
  try {
    return load_named_or_throw(*model, model->config(), checkpoint, identity_naming(), nullptr);
  } catch (const std::exception& e) {
    return internal_error(std::string("loading weights: ") + e.what());
  }
}

Status load_weights(Qwen35& model, const SafetensorsCheckpoint& checkpoint, LoadReport* report) {
  try {
    std::vector<std::string> skipped;
    MC_RETURN_IF_ERROR(load_named_or_throw(*model, model->config(), checkpoint,
                                           qwen35_naming(checkpoint_is_wrapped(checkpoint)), &skipped));
    model->passthrough.clear();
    for (const auto& name : skipped) {
      auto t = checkpoint.tensor(name);
      if (!t.ok()) return t.status();
      model->passthrough.emplace_back(name, *t);
    }
    if (report != nullptr) report->skipped = std::move(skipped);
    return {};
  } catch (const std::exception& e) {
    return internal_error(std::string("loading weights: ") + e.what());
  }
}

Result<Decoder> load_pretrained(const std::filesystem::path& dir, const ModelOptions& options) {
  auto config = load_config(dir);
  if (!config.ok()) return config.status();
  if (config->architecture == Architecture::kQwen35) {
    return invalid_argument(dir.string() + ": a qwen3_5 hybrid checkpoint: load it with load_model() or load_qwen35()");
  }
  auto ck = SafetensorsCheckpoint::open(dir);
  if (!ck.ok()) return ck.status();
  try {
    auto device = checked_device(options);
    if (!device.ok()) return device.status();
    auto dtype = resolve_dtype(options.dtype, *device);
    if (!dtype.ok()) return dtype.status();
    Decoder model(*config);
    model->to(*device, *dtype);
    MC_RETURN_IF_ERROR(load_weights(model, *ck));
    model->eval();
    return model;
  } catch (const std::exception& e) {
    return internal_error(dir.string() + ": " + e.what());
  }
}

Result<Qwen35> load_qwen35(const std::filesystem::path& dir, const ModelOptions& options, LoadReport* report) {
  auto config = load_config(dir);
  if (!config.ok()) return config.status();
  if (config->architecture != Architecture::kQwen35) {
    return invalid_argument(dir.string() + ": model_type " + architecture_name(config->architecture) +
                            " is not qwen3_5 (use load_model() or load_pretrained())");
  }
  auto ck = SafetensorsCheckpoint::open(dir);
  if (!ck.ok()) return ck.status();
  try {
    auto device = checked_device(options);
    if (!device.ok()) return device.status();
    auto dtype = resolve_dtype(options.dtype, *device);
    if (!dtype.ok()) return dtype.status();
    Qwen35 model(*config);
    model->to(*device, *dtype);
    MC_RETURN_IF_ERROR(load_weights(model, *ck, report));
    model->eval();
    return model;
  } catch (const std::exception& e) {
    return internal_error(dir.string() + ": " + e.what());
  }
}

Result<std::shared_ptr<CausalLm>> load_model(const std::filesystem::path& dir, const ModelOptions& options,
                                             LoadReport* report) {
  auto config = load_config(dir);
  if (!config.ok()) return config.status();
  if (config->architecture == Architecture::kQwen35) {
    auto m = load_qwen35(dir, options, report);
    if (!m.ok()) return m.status();
    return std::shared_ptr<CausalLm>(m->ptr());
  }
  auto m = load_pretrained(dir, options);
  if (!m.ok()) return m.status();
  if (report != nullptr) report->skipped.clear();
  return std::shared_ptr<CausalLm>(m->ptr());
}

std::shared_ptr<DecoderImpl> as_decoder(const std::shared_ptr<CausalLm>& model) {
  return std::dynamic_pointer_cast<DecoderImpl>(model);
}

std::shared_ptr<Qwen35Impl> as_qwen35(const std::shared_ptr<CausalLm>& model) {
  return std::dynamic_pointer_cast<Qwen35Impl>(model);
}

Status save_pretrained(Decoder& model, const std::filesystem::path& dir, const ModelOptions& options) {
  return save_model(*model, dir, options);
}

Status save_model(CausalLm& model, const std::filesystem::path& dir, const ModelOptions& options) {
  try {
    const ModelConfig& config = model.config();
    auto* qwen35 = dynamic_cast<Qwen35Impl*>(&model);
    Naming naming = qwen35 ? qwen35_naming(config.text_config_nested) : identity_naming();
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto& p : model.module().named_parameters(/*recurse=*/true)) {
      tensors.emplace_back(naming.to_checkpoint(p.key()), p.value());
    }
    const std::size_t own = tensors.size();
    if (qwen35) tensors.insert(tensors.end(), qwen35->passthrough.begin(), qwen35->passthrough.end());
    return save_tensors(std::move(tensors), config, dir, options, own);
  } catch (const std::exception& e) {
    return internal_error("saving to " + dir.string() + ": " + e.what());
  }
}

}  // namespace musacoder::model
