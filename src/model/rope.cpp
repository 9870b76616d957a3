#include "model/rope.h"

#include <algorithm>
#include <cmath>

namespace musacoder::model {
namespace {

at::Tensor default_inv_freq(double base, int64_t dim) {
  at::Tensor exponents = at::arange(0, dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(dim);
  return 1.0 / at::pow(base, exponents);
}

double yarn_mscale(double scale, double mscale) {
  if (scale <= 1) return 1.0;
  return 0.1 * mscale * std::log(scale) + 1.0;
}

// transformers' _compute_yarn_parameters.
std::pair<at::Tensor, double> yarn_inv_freq(const RopeConfig& r, int64_t dim) {
  double factor = r.factor;
  double attention = r.attention_factor;
  if (attention <= 0) {
    attention = (r.mscale > 0 && r.mscale_all_dim > 0)
                    ? yarn_mscale(factor, r.mscale) / yarn_mscale(factor, r.mscale_all_dim)
                    : yarn_mscale(factor, 1.0);
  }
  const double base = r.theta;
  const double orig = static_cast<double>(r.original_max_position_embeddings);
  auto correction_dim = [&](double rotations) {
    return (dim * std::log(orig / (rotations * 2 * M_PI))) / (2 * std::log(base));
  };
  double low = correction_dim(r.beta_fast);
  double high = correction_dim(r.beta_slow);
  if (r.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  at::Tensor pos_freqs =
      at::pow(base, at::arange(0, dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(dim));
  at::Tensor extrapolation = 1.0 / pos_freqs;
  at::Tensor interpolation = 1.0 / (factor * pos_freqs);
  at::Tensor ramp = at::clamp((at::arange(dim / 2, at::kFloat) - low) / (high - low), 0, 1);
  at::Tensor extrapolation_factor = 1 - ramp;
  at::Tensor inv = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
  return {inv, attention};
}

// transformers' _compute_llama3_parameters.
at::Tensor llama3_inv_freq(const RopeConfig& r, int64_t dim) {
  at::Tensor inv = default_inv_freq(r.theta, dim);
  const double old_len = static_cast<double>(r.original_max_position_embeddings);
  const double low_wavelen = old_len / r.low_freq_factor;
  const double high_wavelen = old_len / r.high_freq_factor;
  at::Tensor wavelen = 2 * M_PI / inv;
  at::Tensor scaled = at::where(wavelen > low_wavelen, inv / r.factor, inv);
  at::Tensor smooth = (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
  at::Tensor smoothed = (1 - smooth) * scaled / r.factor + smooth * scaled;
  at::Tensor medium = at::logical_not(wavelen < high_wavelen) * at::logical_not(wavelen > low_wavelen);
  return at::where(medium, smoothed, scaled);
}

}  // namespace

RotaryEmbedding::RotaryEmbedding(const ModelConfig& config)
    : rope_(config.rope), dim_(config.head_dim), max_position_embeddings_(config.max_position_embeddings) {
  switch (rope_.type) {
    case RopeType::kDefault:
    case RopeType::kDynamic:  // below max_position_embeddings dynamic equals default
      inv_freq_ = default_inv_freq(rope_.theta, dim_);
      break;
    case RopeType::kLinear:
      inv_freq_ = default_inv_freq(rope_.theta, dim_) / rope_.factor;
      break;
    case RopeType::kLlama3:
      inv_freq_ = llama3_inv_freq(rope_, dim_);
      break;
    case RopeType::kYarn: {
      auto [inv, scaling] = yarn_inv_freq(rope_, dim_);
      inv_freq_ = inv;
      attention_scaling_ = scaling;
      break;
    }
  }
}

at::Tensor RotaryEmbedding::inv_freq(int64_t seq_len) const {
  if (rope_.type != RopeType::kDynamic || seq_len <= max_position_embeddings_) return inv_freq_;
  // transformers' _compute_dynamic_ntk_parameters with seq_len > max_position_embeddings.
  const double f = rope_.factor;
  const double d = static_cast<double>(dim_);
  double base =
      rope_.theta *
      std::pow((f * static_cast<double>(seq_len) / static_cast<double>(max_position_embeddings_)) - (f - 1),
               d / (d - 2));
  return default_inv_freq(base, dim_);
}

std::pair<at::Tensor, at::Tensor> RotaryEmbedding::cos_sin(const at::Tensor& position_ids,
                                                           at::ScalarType dtype) const {
  int64_t seq_len = rope_.type == RopeType::kDynamic ? position_ids.max().item<int64_t>() + 1 : 0;
  at::Tensor inv = inv_freq(seq_len).to(position_ids.device());
  // (B, T, 1) * (D/2) -> (B, T, D/2): one product per element, as transformers' fp32 matmul computes it.
  at::Tensor freqs = position_ids.to(at::kFloat).unsqueeze(-1) * inv;
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  at::Tensor cos = emb.cos(), sin = emb.sin();
  if (attention_scaling_ != 1.0) {
    cos = cos * attention_scaling_;
    sin = sin * attention_scaling_;
  }
  return {cos.to(dtype), sin.to(dtype)};
}

at::Tensor apply_rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  at::Tensor c = cos.unsqueeze(1), s = sin.unsqueeze(1);
  at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * c + rotated * s;
}

}  // namespace musacoder::model
