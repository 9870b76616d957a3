// The Qwen3.5 / Qwen3.6 config.json dialect, as transformers' configuration_qwen3_5.py reads it:
//   "qwen3_5"       Qwen3_5Config: text settings under "text_config" (vision_config ignored); whether
//                   lm_head is tied to the embeddings is the top-level tie_word_embeddings.
//   "qwen3_5_text"  Qwen3_5TextConfig: flat.
// Defaults are Qwen3_5TextConfig's (head_dim 256, linear_* 16/32/128/128/4, partial_rotary_factor 0.25,
// full_attention_interval 4 when layer_types is absent).
#include <string>

#include "model/config_detail.h"

namespace musacoder::model::detail {
namespace {

using nlohmann::json;

Result<std::vector<LayerType>> parse_layer_types(const json& t, int64_t layers) {
  std::vector<LayerType> out;
  if (t.contains("layer_types") && !t["layer_types"].is_null()) {
    if (!t["layer_types"].is_array()) return invalid_argument("config.json: layer_types must be an array");
    for (const auto& v : t["layer_types"]) {
      if (v == "linear_attention") {
        out.push_back(LayerType::kLinearAttention);
      } else if (v == "full_attention") {
        out.push_back(LayerType::kFullAttention);
      } else {
        return invalid_argument("config.json: layer type " + v.dump() +
                                " is not supported (linear_attention, full_attention)");
      }
    }
    if (static_cast<int64_t>(out.size()) != layers) {
      return invalid_argument("config.json: layer_types has " + std::to_string(out.size()) +
                              " entries for num_hidden_layers = " + std::to_string(layers));
    }
    return out;
  }
  int64_t interval = 0;
  MC_ASSIGN_OR_RETURN_CFG(interval, get_int(t, "full_attention_interval", int64_t{4}));
  if (interval <= 0) return invalid_argument("config.json: full_attention_interval must be positive");
  for (int64_t i = 0; i < layers; ++i) {
    out.push_back((i + 1) % interval != 0 ? LayerType::kLinearAttention : LayerType::kFullAttention);
  }
  return out;
}

// rope_parameters (v5) or rope_theta / partial_rotary_factor at the text config's top level (older files).
Result<RopeConfig> parse_qwen35_rope(const json& t) {
  json p = t.contains("rope_parameters") && t["rope_parameters"].is_object() ? t["rope_parameters"]
           : t.contains("rope_scaling") && t["rope_scaling"].is_object()     ? t["rope_scaling"]
                                                                              : json::object();
  double theta = 0;
  MC_ASSIGN_OR_RETURN_CFG(theta, get_number(p.contains("rope_theta") ? p : t, "rope_theta", 10000.0));
  if (!p.contains("partial_rotary_factor")) {
    double f = 0;
    MC_ASSIGN_OR_RETURN_CFG(f, get_number(t, "partial_rotary_factor", 0.25));
    p["partial_rotary_factor"] = f;
  }
  RopeConfig r;
  MC_ASSIGN_OR_RETURN_CFG(r, parse_rope(p, theta));
  if (p.contains("mrope_section") && p["mrope_section"].is_array()) {
    for (const auto& v : p["mrope_section"]) {
      if (!v.is_number_integer()) return invalid_argument("config.json: mrope_section must hold integers");
      r.mrope_section.push_back(v.get<int64_t>());
    }
  }
  MC_ASSIGN_OR_RETURN_CFG(r.mrope_interleaved, get_bool(p, "mrope_interleaved", false));
  return r;
}

Status parse_linear(const json& t, LinearAttentionConfig& l) {
  MC_ASSIGN_OR_RETURN_CFG(l.num_key_heads, get_int(t, "linear_num_key_heads", int64_t{16}));
  MC_ASSIGN_OR_RETURN_CFG(l.num_value_heads, get_int(t, "linear_num_value_heads", int64_t{32}));
  MC_ASSIGN_OR_RETURN_CFG(l.key_head_dim, get_int(t, "linear_key_head_dim", int64_t{128}));
  MC_ASSIGN_OR_RETURN_CFG(l.value_head_dim, get_int(t, "linear_value_head_dim", int64_t{128}));
  MC_ASSIGN_OR_RETURN_CFG(l.conv_kernel_dim, get_int(t, "linear_conv_kernel_dim", int64_t{4}));
  return {};
}

Status parse_text_fields(const json& t, ModelConfig& c) {
  MC_ASSIGN_OR_RETURN_CFG(c.vocab_size, get_int(t, "vocab_size", int64_t{248320}));
  MC_ASSIGN_OR_RETURN_CFG(c.hidden_size, get_int(t, "hidden_size"));
  MC_ASSIGN_OR_RETURN_CFG(c.intermediate_size, get_int(t, "intermediate_size"));
  MC_ASSIGN_OR_RETURN_CFG(c.num_hidden_layers, get_int(t, "num_hidden_layers"));
  MC_ASSIGN_OR_RETURN_CFG(c.num_attention_heads, get_int(t, "num_attention_heads"));
  MC_ASSIGN_OR_RETURN_CFG(c.num_key_value_heads, get_int(t, "num_key_value_heads", c.num_attention_heads));
  MC_ASSIGN_OR_RETURN_CFG(c.head_dim, get_int(t, "head_dim", int64_t{256}));
  MC_ASSIGN_OR_RETURN_CFG(c.max_position_embeddings, get_int(t, "max_position_embeddings", int64_t{32768}));
  MC_ASSIGN_OR_RETURN_CFG(c.rms_norm_eps, get_number(t, "rms_norm_eps", 1e-6));
  MC_ASSIGN_OR_RETURN_CFG(c.attention_bias, get_bool(t, "attention_bias", false));
  c.o_proj_bias = c.attention_bias;
  MC_ASSIGN_OR_RETURN_CFG(c.attn_output_gate, get_bool(t, "attn_output_gate", true));
  if (!c.attn_output_gate) {
    return invalid_argument("config.json: attn_output_gate=false is not supported (transformers' qwen3_5 "
                            "attention is always gated)");
  }
  std::string act = t.value("hidden_act", std::string("silu"));
  if (act != "silu") return invalid_argument("config.json: hidden_act '" + act + "' is not supported (silu only)");
  MC_RETURN_IF_ERROR(parse_linear(t, c.linear));
  MC_ASSIGN_OR_RETURN_CFG(c.rope, parse_qwen35_rope(t));
  c.rope.original_max_position_embeddings = c.max_position_embeddings;
  MC_ASSIGN_OR_RETURN_CFG(c.layer_types, parse_layer_types(t, c.num_hidden_layers));
  if (t.contains("dtype") && t["dtype"].is_string()) c.torch_dtype = t["dtype"].get<std::string>();
  if (t.contains("torch_dtype") && t["torch_dtype"].is_string()) c.torch_dtype = t["torch_dtype"].get<std::string>();
  return {};
}

}  // namespace

Result<ModelConfig> parse_qwen35_config(const json& j) {
  ModelConfig c;
  c.architecture = Architecture::kQwen35;
  c.raw = j;
  c.text_config_nested = j.value("model_type", std::string()) == "qwen3_5";
  if (c.text_config_nested && !(j.contains("text_config") && j["text_config"].is_object())) {
    return invalid_argument("config.json: model_type qwen3_5 needs a text_config object");
  }
  const json& t = c.text_config_nested ? j["text_config"] : j;
  MC_RETURN_IF_ERROR(parse_text_fields(t, c));
  // transformers ties lm_head by the outer config's flag (the nested one is ignored).
  MC_ASSIGN_OR_RETURN_CFG(c.tie_word_embeddings, get_bool(j, "tie_word_embeddings", false));
  if (c.text_config_nested && c.torch_dtype == "float32") {
    if (j.contains("dtype") && j["dtype"].is_string()) c.torch_dtype = j["dtype"].get<std::string>();
    if (j.contains("torch_dtype") && j["torch_dtype"].is_string()) c.torch_dtype = j["torch_dtype"].get<std::string>();
  }
  MC_RETURN_IF_ERROR(validate_config(c));
  return c;
}

Status validate_qwen35_config(const ModelConfig& c) {
  const LinearAttentionConfig& l = c.linear;
  for (int64_t v : {l.num_key_heads, l.num_value_heads, l.key_head_dim, l.value_head_dim, l.conv_kernel_dim}) {
    if (v <= 0) return invalid_argument("config: linear_* sizes must be positive");
  }
  if (l.num_value_heads % l.num_key_heads != 0) {
    return invalid_argument("config: linear_num_value_heads (" + std::to_string(l.num_value_heads) +
                            ") must be a multiple of linear_num_key_heads (" + std::to_string(l.num_key_heads) + ")");
  }
  if (static_cast<int64_t>(c.layer_types.size()) != c.num_hidden_layers) {
    return invalid_argument("config: qwen3_5 needs one layer type per layer");
  }
  const auto rotary = static_cast<int64_t>(static_cast<double>(c.head_dim) * c.rope.partial_rotary_factor);
  if (rotary <= 0 || rotary % 2 != 0) {
    return invalid_argument("config: head_dim * partial_rotary_factor must be a positive even number");
  }
  return {};
}

json qwen35_to_json(const ModelConfig& c) {
  json j = c.raw.is_object() ? c.raw : json::object();
  if (c.text_config_nested) {
    j["model_type"] = "qwen3_5";
    if (!j.contains("architectures")) j["architectures"] = json::array({"Qwen3_5ForConditionalGeneration"});
    if (!j.contains("text_config") || !j["text_config"].is_object()) j["text_config"] = json::object();
  } else {
    j["model_type"] = "qwen3_5_text";
    if (!j.contains("architectures")) j["architectures"] = json::array({"Qwen3_5ForCausalLM"});
  }
  json& t = c.text_config_nested ? j["text_config"] : j;
  if (c.text_config_nested) t["model_type"] = "qwen3_5_text";
  t["vocab_size"] = c.vocab_size;
  t["hidden_size"] = c.hidden_size;
  t["intermediate_size"] = c.intermediate_size;
  t["num_hidden_layers"] = c.num_hidden_layers;
  t["num_attention_heads"] = c.num_attention_heads;
  t["num_key_value_heads"] = c.num_key_value_heads;
  t["head_dim"] = c.head_dim;
  t["max_position_embeddings"] = c.max_position_embeddings;
  t["rms_norm_eps"] = c.rms_norm_eps;
  t["hidden_act"] = "silu";
  t["attention_bias"] = c.attention_bias;
  t["attn_output_gate"] = c.attn_output_gate;
  t["linear_num_key_heads"] = c.linear.num_key_heads;
  t["linear_num_value_heads"] = c.linear.num_value_heads;
  t["linear_key_head_dim"] = c.linear.key_head_dim;
  t["linear_value_head_dim"] = c.linear.value_head_dim;
  t["linear_conv_kernel_dim"] = c.linear.conv_kernel_dim;
  json types = json::array();
  for (LayerType lt : c.layer_types) types.push_back(layer_type_name(lt));
  t["layer_types"] = types;
  t.erase("full_attention_interval");
  json rope = rope_json(c.rope);
  rope["rope_theta"] = c.rope.theta;
  rope["partial_rotary_factor"] = c.rope.partial_rotary_factor;
  if (!c.rope.mrope_section.empty()) rope["mrope_section"] = c.rope.mrope_section;
  rope["mrope_interleaved"] = c.rope.mrope_interleaved;
  t["rope_parameters"] = rope;
  t.erase("rope_scaling");
  t.erase("rope_theta");
  t.erase("partial_rotary_factor");
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  if (c.text_config_nested) t["tie_word_embeddings"] = c.tie_word_embeddings;
  j["torch_dtype"] = c.torch_dtype;
  if (j.contains("dtype")) j["dtype"] = c.torch_dtype;
  if (t.contains("dtype")) t["dtype"] = c.torch_dtype;
  return j;
}

}  // namespace musacoder::model::detail
