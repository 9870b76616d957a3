#include "model/config.h"

#include <cmath>
#include <string_view>

#include "core/files.h"
#include "model/config_detail.h"

namespace musacoder::model {
namespace detail {

using nlohmann::json;

Result<int64_t> get_int(const json& j, std::string_view key, std::optional<int64_t> fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    return invalid_argument("config.json: missing required key '" + std::string(key) + "'");
  }
  if (!it->is_number_integer()) {
    return invalid_argument("config.json: key '" + std::string(key) + "' must be an integer");
  }
  return it->get<int64_t>();
}

Result<double> get_number(const json& j, std::string_view key, std::optional<double> fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    return invalid_argument("config.json: missing required key '" + std::string(key) + "'");
  }
  if (!it->is_number())
    return invalid_argument("config.json: key '" + std::string(key) + "' must be a number");
  return it->get<double>();
}

Result<bool> get_bool(const json& j, std::string_view key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    return invalid_argument("config.json: key '" + std::string(key) + "' must be a boolean");
  return it->get<bool>();
}

// Reads a rope_scaling (v4) or rope_parameters (v5) object; `theta` comes from outside for v4.
Result<RopeConfig> parse_rope(const json& s, double theta) {
  RopeConfig r;
  r.theta = theta;
  if (s.is_null()) return r;
  if (!s.is_object()) return invalid_argument("config.json: rope_scaling/rope_parameters must be an object");
  std::string type = "default";
  if (s.contains("rope_type") && s["rope_type"].is_string()) {
    type = s["rope_type"].get<std::string>();
  } else if (s.contains("type") && s["type"].is_string()) {
    type = s["type"].get<std::string>();
  }
  if (type == "default") {
    r.type = RopeType::kDefault;
  } else if (type == "linear") {
    r.type = RopeType::kLinear;
  } else if (type == "dynamic") {
    r.type = RopeType::kDynamic;
  } else if (type == "llama3") {
    r.type = RopeType::kLlama3;
  } else if (type == "yarn") {
    r.type = RopeType::kYarn;
  } else {
    return invalid_argument("config.json: unsupported rope type '" + type +
                            "' (supported: default, linear, dynamic, llama3, yarn)");
  }
  MC_ASSIGN_OR_RETURN_CFG(r.partial_rotary_factor, get_number(s, "partial_rotary_factor", 1.0));
  if (!(r.partial_rotary_factor > 0 && r.partial_rotary_factor <= 1)) {
    return invalid_argument("config.json: partial_rotary_factor must be in (0, 1]");
  }
  bool needs_factor = r.type != RopeType::kDefault;
  MC_ASSIGN_OR_RETURN_CFG(r.factor,
                          get_number(s, "factor", needs_factor ? std::nullopt : std::optional(1.0)));
  MC_ASSIGN_OR_RETURN_CFG(r.low_freq_factor, get_number(s, "low_freq_factor", 1.0));
  MC_ASSIGN_OR_RETURN_CFG(r.high_freq_factor, get_number(s, "high_freq_factor", 4.0));
  MC_ASSIGN_OR_RETURN_CFG(r.original_max_position_embeddings,
                          get_int(s, "original_max_position_embeddings", int64_t{0}));
  MC_ASSIGN_OR_RETURN_CFG(r.beta_fast, get_number(s, "beta_fast", 32.0));
  MC_ASSIGN_OR_RETURN_CFG(r.beta_slow, get_number(s, "beta_slow", 1.0));
  MC_ASSIGN_OR_RETURN_CFG(r.attention_factor, get_number(s, "attention_factor", 0.0));
  MC_ASSIGN_OR_RETURN_CFG(r.mscale, get_number(s, "mscale", 0.0));
  MC_ASSIGN_OR_RETURN_CFG(r.mscale_all_dim, get_number(s, "mscale_all_dim", 0.0));
  MC_ASSIGN_OR_RETURN_CFG(r.truncate, get_bool(s, "truncate", true));
  if (r.type == RopeType::kLlama3 && r.original_max_position_embeddings <= 0) {
    return invalid_argument("config.json: llama3 rope needs original_max_position_embeddings");
  }
  if (r.type == RopeType::kLlama3 && r.high_freq_factor == r.low_freq_factor) {
    return invalid_argument("config.json: llama3 rope needs high_freq_factor != low_freq_factor");
  }
  if (r.factor <= 0) return invalid_argument("config.json: rope factor must be positive");
  return r;
}

}  // namespace detail

using detail::get_bool;
using detail::get_int;
using detail::get_number;
using detail::parse_rope;
using nlohmann::json;

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::kQwen2:
      return "qwen2";
    case Architecture::kQwen3:
      return "qwen3";
    case Architecture::kLlama:
      return "llama";
    case Architecture::kQwen35:
      return "qwen3_5";
  }
  return "?";
}

const char* layer_type_name(LayerType t) {
  return t == LayerType::kLinearAttention ? "linear_attention" : "full_attention";
}

bool is_linear_attention_layer(const ModelConfig& c, int64_t i) {
  return i >= 0 && i < static_cast<int64_t>(c.layer_types.size()) &&
         c.layer_types[static_cast<std::size_t>(i)] == LayerType::kLinearAttention;
}

const char* rope_type_name(RopeType t) {
  switch (t) {
    case RopeType::kDefault:
      return "default";
    case RopeType::kLinear:
      return "linear";
    case RopeType::kDynamic:
      return "dynamic";
    case RopeType::kLlama3:
      return "llama3";
    case RopeType::kYarn:
      return "yarn";
  }
  return "?";
}

Result<ModelConfig> parse_config(const json& j) {
  if (!j.is_object()) return invalid_argument("config.json: top level must be an object");
  ModelConfig c;
  c.raw = j;
  std::string type = j.value("model_type", std::string());
  if (type == "qwen3_5" || type == "qwen3_5_text") return detail::parse_qwen35_config(j);
  if (type == "qwen2") {
    c.architecture = Architecture::kQwen2;
  } else if (type == "qwen3") {
    c.architecture = Architecture::kQwen3;
  } else if (type == "llama") {
    c.architecture = Architecture::kLlama;
  } else {
    return invalid_argument("config.json: unsupported model_type '" + type +
                            "' (supported: qwen2, qwen3, llama, qwen3_5, qwen3_5_text); architectures: " +
                            (j.contains("architectures") ? j["architectures"].dump() : std::string("none")));
  }
  MC_ASSIGN_OR_RETURN_CFG(c.vocab_size, get_int(j, "vocab_size"));
  MC_ASSIGN_OR_RETURN_CFG(c.hidden_size, get_int(j, "hidden_size"));
  MC_ASSIGN_OR_RETURN_CFG(c.intermediate_size, get_int(j, "intermediate_size"));
  MC_ASSIGN_OR_RETURN_CFG(c.num_hidden_layers, get_int(j, "num_hidden_layers"));
  MC_ASSIGN_OR_RETURN_CFG(c.num_attention_heads, get_int(j, "num_attention_heads"));
  MC_ASSIGN_OR_RETURN_CFG(c.num_key_value_heads, get_int(j, "num_key_value_heads", c.num_attention_heads));
  if (c.num_attention_heads <= 0)
    return invalid_argument("config.json: num_attention_heads must be positive");
  MC_ASSIGN_OR_RETURN_CFG(c.head_dim, get_int(j, "head_dim", c.hidden_size / c.num_attention_heads));
  MC_ASSIGN_OR_RETURN_CFG(c.max_position_embeddings, get_int(j, "max_position_embeddings", int64_t{4096}));
  MC_ASSIGN_OR_RETURN_CFG(c.rms_norm_eps, get_number(j, "rms_norm_eps", 1e-6));
  MC_ASSIGN_OR_RETURN_CFG(c.tie_word_embeddings, get_bool(j, "tie_word_embeddings", false));
  std::string act = j.value("hidden_act", std::string("silu"));
  if (act != "silu")
    return invalid_argument("config.json: hidden_act '" + act + "' is not supported (silu only)");

  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    const json& p = j["rope_parameters"];
    if (p.contains("full_attention") || p.contains("sliding_attention")) {
      return invalid_argument("config.json: per-layer-type rope_parameters are not supported");
    }
    double theta = 0;
    MC_ASSIGN_OR_RETURN_CFG(theta, get_number(p, "rope_theta", get_number(j, "rope_theta", 10000.0).value()));
    MC_ASSIGN_OR_RETURN_CFG(c.rope, parse_rope(p, theta));
  } else {
    double theta = 0;
    MC_ASSIGN_OR_RETURN_CFG(theta, get_number(j, "rope_theta", 10000.0));
    MC_ASSIGN_OR_RETURN_CFG(c.rope,
                            parse_rope(j.contains("rope_scaling") ? j["rope_scaling"] : json(), theta));
  }
  if (c.rope.original_max_position_embeddings == 0) {
    c.rope.original_max_position_embeddings = c.max_position_embeddings;
  }
  if (c.rope.partial_rotary_factor != 1.0) {
    return invalid_argument("config.json: partial_rotary_factor != 1 is not supported for " + type);
  }

  bool sliding = false;
  MC_ASSIGN_OR_RETURN_CFG(sliding, get_bool(j, "use_sliding_window", false));
  if (sliding) return invalid_argument("config.json: use_sliding_window=true is not supported");
  if (j.contains("layer_types") && j["layer_types"].is_array()) {
    for (const auto& t : j["layer_types"]) {
      if (t != "full_attention") {
        return invalid_argument("config.json: layer type " + t.dump() +
                                " is not supported (full_attention only)");
      }
    }
  }
  switch (c.architecture) {
    case Architecture::kQwen2:
      c.attention_bias = true;
      break;
    case Architecture::kQwen3:
      c.qk_norm = true;
      MC_ASSIGN_OR_RETURN_CFG(c.attention_bias, get_bool(j, "attention_bias", false));
      c.o_proj_bias = c.attention_bias;
      break;
    case Architecture::kLlama:
      MC_ASSIGN_OR_RETURN_CFG(c.attention_bias, get_bool(j, "attention_bias", false));
      c.o_proj_bias = c.attention_bias;
      MC_ASSIGN_OR_RETURN_CFG(c.mlp_bias, get_bool(j, "mlp_bias", false));
      break;
    case Architecture::kQwen35:  // parse_qwen35_config
      break;
  }
  if (j.contains("torch_dtype") && j["torch_dtype"].is_string()) {
    c.torch_dtype = j["torch_dtype"].get<std::string>();
  } else if (j.contains("dtype") && j["dtype"].is_string()) {
    c.torch_dtype = j["dtype"].get<std::string>();
  }
  MC_RETURN_IF_ERROR(validate_config(c));
  return c;
}

Status validate_config(const ModelConfig& c) {
  auto positive = [](int64_t v, const char* name) -> Status {
    if (v <= 0) return invalid_argument(std::string("config: ") + name + " must be positive");
    return {};
  };
  MC_RETURN_IF_ERROR(positive(c.vocab_size, "vocab_size"));
  MC_RETURN_IF_ERROR(positive(c.hidden_size, "hidden_size"));
  MC_RETURN_IF_ERROR(positive(c.intermediate_size, "intermediate_size"));
  MC_RETURN_IF_ERROR(positive(c.num_hidden_layers, "num_hidden_layers"));
  MC_RETURN_IF_ERROR(positive(c.num_attention_heads, "num_attention_heads"));
  MC_RETURN_IF_ERROR(positive(c.num_key_value_heads, "num_key_value_heads"));
  MC_RETURN_IF_ERROR(positive(c.head_dim, "head_dim"));
  MC_RETURN_IF_ERROR(positive(c.max_position_embeddings, "max_position_embeddings"));
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return invalid_argument("config: num_attention_heads (" + std::to_string(c.num_attention_heads) +
                            ") must be a multiple of num_key_value_heads (" +
                            std::to_string(c.num_key_value_heads) + ")");
  }
  if (c.head_dim % 2 != 0) return invalid_argument("config: head_dim must be even for RoPE");
  if (!(c.rms_norm_eps > 0)) return invalid_argument("config: rms_norm_eps must be positive");
  if (!(c.rope.theta > 0)) return invalid_argument("config: rope_theta must be positive");
  if (c.architecture == Architecture::kQwen35) return detail::validate_qwen35_config(c);
  if (!c.layer_types.empty()) return invalid_argument("config: layer_types are for qwen3_5 only");
  return {};
}

Result<ModelConfig> load_config(const std::filesystem::path& path) {
  std::filesystem::path file = std::filesystem::is_directory(path) ? path / "config.json" : path;
  auto text = read_file(file);
  if (!text.ok()) return text.status();
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument(file.string() + ": not valid JSON");
  auto c = parse_config(j);
  if (!c.ok()) return Status(c.status().code(), file.string() + ": " + c.status().message());
  return c;
}

json to_json(const ModelConfig& c) {
  if (c.architecture == Architecture::kQwen35) return detail::qwen35_to_json(c);
  json j = c.raw.is_object() ? c.raw : json::object();
  j["model_type"] = architecture_name(c.architecture);
  if (!j.contains("architectures") || !j["architectures"].is_array()) {
    const char* cls = c.architecture == Architecture::kQwen2   ? "Qwen2ForCausalLM"
                      : c.architecture == Architecture::kQwen3 ? "Qwen3ForCausalLM"
                                                               : "LlamaForCausalLM";
    j["architectures"] = json::array({cls});
  }
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["hidden_act"] = "silu";
  if (c.architecture != Architecture::kQwen2) j["attention_bias"] = c.attention_bias;
  if (c.architecture == Architecture::kLlama) j["mlp_bias"] = c.mlp_bias;
  j["torch_dtype"] = c.torch_dtype;
  if (j.contains("dtype")) j["dtype"] = c.torch_dtype;

  json scaling = detail::rope_json(c.rope);
  const RopeConfig& r = c.rope;
  if (j.contains("rope_parameters")) {  // transformers 5 dialect: keep it
    scaling["rope_theta"] = r.theta;
    j["rope_parameters"] = scaling;
    j.erase("rope_scaling");
  } else {
    j["rope_theta"] = r.theta;
    j["rope_scaling"] = r.type == RopeType::kDefault ? json() : scaling;
  }
  return j;
}

json detail::rope_json(const RopeConfig& r) {
  json scaling = json::object();
  scaling["rope_type"] = rope_type_name(r.type);
  if (r.type != RopeType::kDefault) scaling["factor"] = r.factor;
  if (r.type == RopeType::kLlama3) {
    scaling["low_freq_factor"] = r.low_freq_factor;
    scaling["high_freq_factor"] = r.high_freq_factor;
  }
  if (r.type == RopeType::kLlama3 || r.type == RopeType::kYarn) {
    scaling["original_max_position_embeddings"] = r.original_max_position_embeddings;
  }
  if (r.type == RopeType::kYarn) {
    scaling["beta_fast"] = r.beta_fast;
    scaling["beta_slow"] = r.beta_slow;
    if (r.attention_factor > 0) scaling["attention_factor"] = r.attention_factor;
    if (r.mscale > 0) scaling["mscale"] = r.mscale;
    if (r.mscale_all_dim > 0) scaling["mscale_all_dim"] = r.mscale_all_dim;
    scaling["truncate"] = r.truncate;
  }
  return scaling;
}

}  // namespace musacoder::model
