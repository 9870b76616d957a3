#include "model/checkpoint.h"

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

Status load_weights_or_throw(Decoder& model, const SafetensorsCheckpoint& ck) {
  std::vector<std::string> missing, unexpected, mismatched;
  std::set<std::string> expected;
  auto params = model->named_parameters(/*recurse=*/true);
  for (const auto& p : params) {
    expected.insert(p.key());
    if (!ck.contains(p.key())) {
      missing.push_back(p.key());
      continue;
    }
    auto e = ck.entry(p.key());
    if (!e.ok()) return e.status();
    if (c10::IntArrayRef(e->shape) != p.value().sizes()) {
      mismatched.push_back(p.key() + " (checkpoint " + shape_string(e->shape) + ", model " +
                           shape_string(p.value().sizes()) + ")");
    }
  }
  for (const auto& name : ck.names()) {
    if (expected.count(name)) continue;
    if (name == "lm_head.weight" && model->config().tie_word_embeddings) continue;
    if (name.size() > 22 && name.ends_with("rotary_emb.inv_freq")) continue;
    unexpected.push_back(name);
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::string msg = "checkpoint does not match the " +
                      std::string(architecture_name(model->config().architecture)) +
                      " model built from config.json:";
    auto list = [&](const char* what, const std::vector<std::string>& v) {
      if (v.empty()) return;
      msg += std::string("\n  ") + what + " (" + std::to_string(v.size()) + "):";
      for (std::size_t i = 0; i < v.size() && i < 20; ++i) msg += " " + v[i];
      if (v.size() > 20) msg += " ...";
    };
    list("missing", missing);
    list("unexpected", unexpected);
    list("shape mismatch", mismatched);
    return invalid_argument(msg);
  }
  torch::NoGradGuard no_grad;
  for (auto& p : params) {
    auto t = ck.tensor(p.key());
    if (!t.ok()) return t.status();
    p.value().copy_(*t);
  }
  return {};
}

}  // namespace

Result<torch::ScalarType> resolve_dtype(const std::string& dtype, const torch::Device& device) {
  if (dtype == "auto" || dtype.empty()) return device.is_cuda() ? torch::kBFloat16 : torch::kFloat;
  return parse_dtype(dtype);
}

Status load_weights(Decoder& model, const SafetensorsCheckpoint& checkpoint) {
  try {
    return load_weights_or_throw(model, checkpoint);
  } catch (const std::exception& e) {
    return internal_error(std::string("loading weights: ") + e.what());
  }
}

Result<Decoder> load_pretrained(const std::filesystem::path& dir, const ModelOptions& options) {
  auto config = load_config(dir);
  if (!config.ok()) return config.status();
  auto ck = SafetensorsCheckpoint::open(dir);
  if (!ck.ok()) return ck.status();
  try {
    torch::Device device(options.device);
    if (device.is_cuda() && !torch::cuda::is_available()) {
      return unavailable("device '" + options.device + "' requested but CUDA is not available to libtorch");
    }
    auto dtype = resolve_dtype(options.dtype, device);
    if (!dtype.ok()) return dtype.status();
    Decoder model(*config);
    model->to(device, *dtype);
    MC_RETURN_IF_ERROR(load_weights(model, *ck));
    model->eval();
    return model;
  } catch (const std::exception& e) {
    return internal_error(dir.string() + ": " + e.what());
  }
}

Status save_pretrained(Decoder& model, const std::filesystem::path& dir, const ModelOptions& options) {
  try {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return internal_error(dir.string() + ": cannot create directory: " + ec.message());
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    std::optional<torch::ScalarType> out_dtype;
    if (!options.save_dtype.empty()) {
      auto d = parse_dtype(options.save_dtype);
      if (!d.ok()) return d.status();
      out_dtype = *d;
    }
    torch::ScalarType written = torch::kFloat;
    for (const auto& p : model->named_parameters(/*recurse=*/true)) {
      torch::Tensor t = p.value().detach();
      if (out_dtype) t = t.to(*out_dtype);
      written = t.scalar_type();
      tensors.emplace_back(p.key(), t);
    }
    ModelConfig c = model->config();
    c.torch_dtype = hf_dtype_name(written);
    MC_RETURN_IF_ERROR(write_file_atomic(dir / "config.json", to_json(c).dump(2) + "\n"));
    return write_safetensors_dir(dir, tensors, options.max_shard_bytes);
  } catch (const std::exception& e) {
    return internal_error("saving to " + dir.string() + ": " + e.what());
  }
}

}  // namespace musacoder::model
