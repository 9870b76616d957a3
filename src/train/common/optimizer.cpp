#include "train/common/optimizer.h"

#include <cmath>
#include <optional>

#include "core/check.h"
#ifdef MUSACODER_HAVE_TRAIN_CUDA_KERNELS
#include "train/common/adamw_cuda.h"
#endif

namespace musacoder::train {
namespace {

bool low_precision(const torch::Tensor& p) { return p.scalar_type() != torch::kFloat; }

}  // namespace

AdamW::AdamW(std::vector<NamedParam> params, AdamWOptions options, std::vector<bool> owned)
    : params_(std::move(params)), options_(options), owned_(std::move(owned)) {
  if (owned_.empty()) owned_.assign(params_.size(), true);
  MC_CHECK(owned_.size() == params_.size());
  const std::size_t n = params_.size();
  grad32_.resize(n);
  grad32_stale_.assign(n, true);
  pending_.resize(n);
  master_.resize(n);
  exp_avg_.resize(n);
  exp_avg_sq_.resize(n);
  steps_.resize(n);
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < n; ++i) {
    const torch::Tensor& p = params_[i].param;
    if (low_precision(p)) grad32_[i] = torch::empty(p.sizes(), p.options().dtype(torch::kFloat));
    if (!owned_[i]) continue;
    master_[i] = low_precision(p) ? p.detach().to(torch::kFloat).clone() : p;
    exp_avg_[i] = torch::zeros_like(master_[i]);
    exp_avg_sq_[i] = torch::zeros_like(master_[i]);
    steps_[i] = torch::zeros({}, master_[i].options());
  }
}

void AdamW::accumulate_grads() {
  torch::NoGradGuard no_grad;
  materialize_pending();  // a second backward since the step: accumulation continues in float32
  // One multi-tensor kernel for the casts of the first backward since the step (torch's _foreach_copy_ takes
  // a bf16 source list into an fp32 list); later backwards add tensor by tensor. cast_from keeps the cleared
  // gradients alive until the copy. With the one-pass kernel the first backward's gradient stays as it is.
  std::vector<torch::Tensor> cast_to, cast_from;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor& p = params_[i].param;
    if (!grad32_[i].defined() || !p.grad().defined()) continue;
    if (grad32_stale_[i] && options_.one_pass_kernel && owned_[i] && p.is_cuda()) {
      pending_[i] = p.grad();
    } else if (grad32_stale_[i]) {
      cast_to.push_back(grad32_[i]);
      cast_from.push_back(p.grad());
      grad32_stale_[i] = false;
    } else {
      grad32_[i].add_(p.grad());
    }
    p.mutable_grad() = torch::Tensor();
  }
  if (!cast_to.empty()) at::_foreach_copy_(cast_to, cast_from);
}

void AdamW::materialize_pending() {
  std::vector<torch::Tensor> to, from;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!pending_[i].defined()) continue;
    to.push_back(grad32_[i]);
    from.push_back(pending_[i]);
    pending_[i] = torch::Tensor();
    grad32_stale_[i] = false;
  }
  if (!to.empty()) at::_foreach_copy_(to, from);
}

std::vector<torch::Tensor> AdamW::current_grads() {
  std::vector<torch::Tensor> out;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (pending_[i].defined()) {
      out.push_back(pending_[i]);
    } else if (grad32_[i].defined()) {
      if (grad32_stale_[i]) grad32_[i].zero_(), grad32_stale_[i] = false;  // no backward reached it
      out.push_back(grad32_[i]);
    } else {
      torch::Tensor& p = params_[i].param;
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      out.push_back(p.grad());
    }
  }
  return out;
}

std::vector<torch::Tensor> AdamW::grads() {
  materialize_pending();
  return current_grads();
}

torch::Tensor AdamW::clip_grad_norm(double max_norm) {
  torch::NoGradGuard no_grad;
  // The fused paths read pending low-precision gradients as they are (norms accumulated in float32); the
  // reference path scales float32 copies in place.
  std::vector<torch::Tensor> g = options_.fused ? current_grads() : grads();
  torch::Tensor total = torch::stack(at::_foreach_norm(g, 2, torch::kFloat)).norm();
  if (max_norm > 0 && options_.fused) {
    grad_scale_ = ((total + 1e-6) / max_norm).clamp_min(1.0).to(torch::kFloat);
  } else if (max_norm > 0) {
    torch::Tensor coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
    at::_foreach_mul_(g, coef);
  }
  return total;
}

void AdamW::update(const std::vector<std::size_t>& which, double lr, double wd) {
  if (which.empty()) return;
  std::vector<torch::Tensor> p, g, m, v, s;
  std::vector<torch::Tensor> all_grads = grads();
  for (std::size_t i : which) {
    p.push_back(master_[i]);
    g.push_back(all_grads[i]);
    m.push_back(exp_avg_[i]);
    v.push_back(exp_avg_sq_[i]);
    s.push_back(steps_[i]);
  }
  const AdamWOptions& o = options_;
  if (o.fused) {
    // The fused kernel reads the step counters but does not advance them (torch.optim advances them first):
    // a counter left at 0 makes the bias correction 1 − β⁰ = 0 and the update NaN.
    at::_foreach_add_(s, 1.0);
    std::optional<torch::Tensor> scale;
    if (grad_scale_.defined()) scale = grad_scale_;
    at::_fused_adamw_(p, g, m, v, /*max_exp_avg_sqs=*/{}, s, lr, o.beta1, o.beta2, wd, o.eps,
                      /*amsgrad=*/false,
                      /*maximize=*/false, scale);
    return;
  }
  for (std::size_t k = 0; k < p.size(); ++k) {
    s[k].add_(1);
    const double t = s[k].item<double>();
    p[k].mul_(1 - lr * wd);
    m[k].lerp_(g[k], 1 - o.beta1);
    v[k].mul_(o.beta2).addcmul_(g[k], g[k], 1 - o.beta2);
    torch::Tensor denom = (v[k] / (1 - std::pow(o.beta2, t))).sqrt_().add_(o.eps);
    p[k].addcdiv_(m[k], denom, -lr / (1 - std::pow(o.beta1, t)));
  }
}

std::vector<std::size_t> AdamW::one_pass_update(double lr) {
#ifdef MUSACODER_HAVE_TRAIN_CUDA_KERNELS
  if (!options_.one_pass_kernel) return {};
  std::vector<torch::Tensor> g = current_grads();
  std::vector<detail::AdamWItem> items;
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& p = params_[i].param;
    if (!owned_[i] || !low_precision(p)) continue;
    detail::AdamWItem item{
        p, master_[i], exp_avg_[i], exp_avg_sq_[i], g[i], p.dim() >= 2 ? options_.weight_decay : 0.0};
    if (!detail::cuda_adamw_takes(item) ||
        (!items.empty() && p.scalar_type() != items[0].param.scalar_type()))
      continue;  // the torch path updates it
    items.push_back(std::move(item));
    which.push_back(i);
  }
  if (items.empty()) return {};
  std::vector<torch::Tensor> s;
  for (std::size_t i : which) s.push_back(steps_[i]);
  at::_foreach_add_(s, 1.0);  // the checkpointed counters, as the torch path keeps them
  host_step_ = host_step_ < 0 ? static_cast<int64_t>(steps_[which[0]].item<double>()) : host_step_ + 1;
  detail::cuda_adamw_step(items, lr, options_.beta1, options_.beta2, options_.eps, host_step_, grad_scale_);
  for (std::size_t i : which) pending_[i] = torch::Tensor();  // consumed (stream-ordered reuse of the memory)
  return which;
#else
  (void)lr;
  return {};
#endif
}

void AdamW::step(double lr) {
  torch::NoGradGuard no_grad;
  std::vector<bool> done(params_.size(), false);  // updated (and rounded into the parameter) by the kernel
  for (std::size_t i : one_pass_update(lr)) done[i] = true;
  std::vector<std::size_t> decay, no_decay;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (owned_[i] && !done[i]) (params_[i].param.dim() >= 2 ? decay : no_decay).push_back(i);
  }
  update(decay, lr, options_.weight_decay);
  update(no_decay, lr, 0.0);
  std::vector<torch::Tensor> to, from;  // the updated masters rounded into the parameters, in one kernel
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (owned_[i] && !done[i] && low_precision(params_[i].param)) {
      to.push_back(params_[i].param), from.push_back(master_[i]);
      host_step_ = -1;  // the torch path advanced a counter the kernel path did not count
    }
  }
  if (!to.empty()) at::_foreach_copy_(to, from);
  zero_grad();
}

void AdamW::zero_grad() {
  grad_scale_ = torch::Tensor();
  for (std::size_t i = 0; i < params_.size(); ++i) {
    pending_[i] = torch::Tensor();
    grad32_stale_[i] = true;  // overwritten by the next accumulate_grads, zeroed by grads() if none comes
    params_[i].param.mutable_grad() = torch::Tensor();
  }
}

std::vector<std::pair<std::string, torch::Tensor>> AdamW::state() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!owned_[i]) continue;
    const std::string& n = params_[i].name;
    out.emplace_back(n + ".exp_avg", exp_avg_[i]);
    out.emplace_back(n + ".exp_avg_sq", exp_avg_sq_[i]);
    out.emplace_back(n + ".step", steps_[i]);
    if (low_precision(params_[i].param)) out.emplace_back(n + ".master", master_[i]);
  }
  return out;
}

Status AdamW::load_state(const std::map<std::string, torch::Tensor>& tensors) {
  auto dest = state();
  for (const auto& [name, t] : dest) {
    auto it = tensors.find(name);
    if (it == tensors.end()) return invalid_argument("optimizer state has no tensor '" + name + "'");
    if (it->second.sizes() != t.sizes()) return invalid_argument("optimizer state '" + name + "' has another shape");
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : dest) t.copy_(tensors.at(name));
  host_step_ = -1;  // read again from the restored counters
  return {};
}

}  // namespace musacoder::train
