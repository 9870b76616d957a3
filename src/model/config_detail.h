// Internal to src/model's config parsing (config.cpp, config_qwen3_5.cpp): typed JSON getters and the
// Qwen3.5 dialect. Not part of the component's interface — include model/config.h instead.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "model/config.h"

#define MC_ASSIGN_OR_RETURN_CFG(lhs, expr) \
  do {                                     \
    auto _r = (expr);                      \
    if (!_r.ok()) return _r.status();      \
    lhs = *_r;                             \
  } while (0)

namespace musacoder::model::detail {

// Key lookups: a missing or null key gives `fallback`, or an error naming the key when there is none.
Result<int64_t> get_int(const nlohmann::json& j, std::string_view key, std::optional<int64_t> fallback = {});
Result<double> get_number(const nlohmann::json& j, std::string_view key, std::optional<double> fallback = {});
Result<bool> get_bool(const nlohmann::json& j, std::string_view key, bool fallback);

// A rope_scaling (v4) or rope_parameters (v5) object; `theta` comes from outside for v4.
Result<RopeConfig> parse_rope(const nlohmann::json& s, double theta);
// The rope_parameters object for `r` without rope_theta.
nlohmann::json rope_json(const RopeConfig& r);

// model_type "qwen3_5" (text_config nested) or "qwen3_5_text".
Result<ModelConfig> parse_qwen35_config(const nlohmann::json& j);
nlohmann::json qwen35_to_json(const ModelConfig& c);
Status validate_qwen35_config(const ModelConfig& c);

}  // namespace musacoder::model::detail
