#include "train/rl/model_copies.h"

#include <span>

#include "rl/mirror_schedule.h"

namespace musacoder::train::rl {

model::Decoder clone_decoder(model::Decoder& source, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  model::Decoder copy(source->config());
  const auto dtype = source->parameters().front().scalar_type();
  copy->to(device, dtype);
  auto src = source->named_parameters();
  for (auto& p : copy->named_parameters()) {
    p.value().copy_(src[p.key()]);
    p.value().set_requires_grad(false);
  }
  auto src_buffers = source->named_buffers();
  for (auto& b : copy->named_buffers()) {
    if (src_buffers.contains(b.key())) b.value().copy_(src_buffers[b.key()]);
  }
  copy->eval();
  return copy;
}

Status ema_update_model(model::Decoder& mirror, model::Decoder& policy, double decay) {
  torch::NoGradGuard no_grad;
  auto src = policy->named_parameters();
  for (auto& p : mirror->named_parameters()) {
    if (!src.contains(p.key())) return invalid_argument("mirror parameter " + p.key() + " is not in the policy");
    torch::Tensor m = p.value();
    torch::Tensor cur = src[p.key()].detach().to(m.device(), m.scalar_type());
    if (m.is_cpu() && m.scalar_type() == torch::kFloat && m.is_contiguous()) {
      cur = cur.contiguous();
      auto st = ::musacoder::rl::ema_update(std::span<float>(m.data_ptr<float>(), static_cast<std::size_t>(m.numel())),
                                            std::span<const float>(cur.data_ptr<float>(), static_cast<std::size_t>(cur.numel())),
                                            decay);
      if (!st.ok()) return invalid_argument("EMA update of " + p.key() + ": " + st.message());
    } else {
      m.mul_(decay).add_(cur, 1.0 - decay);
    }
  }
  return {};
}

}  // namespace musacoder::train::rl
