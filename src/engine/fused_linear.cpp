#include "engine/fused_linear.h"

namespace musacoder::engine {
namespace {

bool can_share(const std::vector<torch::nn::Linear>& parts) {
  if (parts.size() < 2) return false;
  const auto& w0 = parts[0]->weight;
  const bool bias = parts[0]->bias.defined();
  for (const auto& p : parts) {
    const auto& w = p->weight;
    if (w.dim() != 2 || w.size(1) != w0.size(1) || w.scalar_type() != w0.scalar_type() ||
        w.device() != w0.device() || p->bias.defined() != bias)
      return false;
    if (bias && (p->bias.scalar_type() != w0.scalar_type() || p->bias.device() != w0.device())) return false;
  }
  return true;
}

// Points each tensor at its row block of `all` (same TensorImpl: parameters keep their identity) and appends
// the block's address to `ptrs`.
void point_at(const std::vector<torch::Tensor>& parts, const torch::Tensor& all,
              std::vector<const void*>& ptrs) {
  int64_t at = 0;
  for (const auto& p : parts) {
    const int64_t n = p.size(0);
    const_cast<torch::Tensor&>(p).set_data(all.narrow(0, at, n));
    ptrs.push_back(p.data_ptr());
    at += n;
  }
}

}  // namespace

FusedLinear::FusedLinear(std::vector<torch::nn::Linear> parts, bool enabled) : parts_(std::move(parts)) {
  for (const auto& p : parts_) sizes_.push_back(p->weight.size(0));
  fusable_ = enabled && can_share(parts_);
  if (fusable_) fuse();
}

void FusedLinear::fuse() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> w, b;
  for (const auto& p : parts_) {
    w.push_back(p->weight);
    if (p->bias.defined()) b.push_back(p->bias);
  }
  views_.clear();
  weight_ = torch::cat(w, 0);
  point_at(w, weight_, views_);
  bias_ = b.empty() ? torch::Tensor() : torch::cat(b, 0);
  if (!b.empty()) point_at(b, bias_, views_);
}

// Per step, so no tensor is made here: the addresses fuse() recorded, the sizes and the dtype.
bool FusedLinear::intact() const {
  const std::size_t n = parts_.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& p = parts_[i];
    if (p->weight.data_ptr() != views_[i] || p->weight.size(0) != sizes_[i] ||
        p->weight.scalar_type() != weight_.scalar_type())
      return false;
    if (bias_.defined() && (!p->bias.defined() || p->bias.data_ptr() != views_[n + i] ||
                            p->bias.scalar_type() != bias_.scalar_type()))
      return false;
  }
  return true;
}

bool FusedLinear::refresh() {
  if (!fusable_ || intact()) return false;
  fusable_ = can_share(parts_);
  if (fusable_) fuse();
  return true;
}

std::vector<torch::Tensor> FusedLinear::operator()(const torch::Tensor& x) const {
  std::vector<torch::Tensor> out;
  if (!fusable_) {
    for (const auto& p : parts_) out.push_back(torch::nn::functional::linear(x, p->weight, p->bias));
    return out;
  }
  return split(torch::nn::functional::linear(x, weight_, bias_));
}

}  // namespace musacoder::engine
