// AdamW over a model's trainable parameters with fp32 master weights, fp32 gradient accumulation, gradient
// clipping without a host sync, and ZeRO-1 ownership (a rank keeps optimizer state only for the parameters it
// owns and updates only those; parallel.h broadcasts them afterwards).
//
// Precision: parameters may be bf16/fp16 (the model computes in its parameters' dtype). Each backward's grads are
// added into an fp32 buffer (accumulate_grads), the update runs on fp32 master copies with fp32 moments, and the
// result is rounded into the parameter. fp32 parameters are their own master and accumulate in .grad.
// Update (torch.optim.AdamW, decoupled decay), per parameter, t = update count after increment:
//   p ← p·(1 − lr·wd);  m ← β1 m + (1−β1) g;  v ← β2 v + (1−β2) g²;
//   p ← p − lr · (m / (1 − β1ᵗ)) / (sqrt(v / (1 − β2ᵗ)) + ε)
// wd is applied to matrices only (dim ≥ 2: no decay for norms and biases, as transformers' Trainer does).
// The fused kernel (at::_fused_adamw_, CPU and CUDA) reads per-parameter float step tensors (on the parameter's
// device, so no host sync) but does not advance them: they are incremented right before each call, as
// torch.optim.AdamW does (left at 0, the bias correction 1 − β⁰ would divide by zero). Thread-safety: none.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace musacoder::train {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // decoupled, matrices only
  bool fused = true;          // at::_fused_adamw_; false: the same update in plain tensor ops (the reference)
  // CUDA builds, low-precision parameters on CUDA: the one-pass kernel (cuda/adamw_kernels.h) — the gradient
  // of a single backward read as it is (no float32 copy), masters and moments updated and the parameter
  // rounded in one kernel. Same update as `fused` (float32 math); off: the torch path.
  bool one_pass_kernel = false;
};

struct NamedParam {
  std::string name;
  torch::Tensor param;  // a leaf that requires grad
};

class AdamW {
 public:
  // owned: one flag per parameter (empty: all owned).
  AdamW(std::vector<NamedParam> params, AdamWOptions options, std::vector<bool> owned = {});

  const std::vector<NamedParam>& params() const { return params_; }
  bool owns(std::size_t i) const { return owned_[i]; }

  // After every backward: low-precision .grad is added into the fp32 buffer (copied, for the first backward
  // since the last step) and cleared.
  void accumulate_grads();
  // The fp32 gradient of every parameter (zeros where backward produced none), in params() order.
  std::vector<torch::Tensor> grads();
  // Total L2 norm of grads() as a 0-dim device tensor; when max_norm > 0 the next step() uses the grads
  // scaled by min(1, max_norm / (norm + 1e-6)), on the device (no host sync). The fused update takes the
  // factor as its grad_scale (divides by max(1, (norm + 1e-6) / max_norm) as it loads each gradient: no pass
  // of its own over the fp32 gradients); the reference path scales grads() in place here.
  torch::Tensor clip_grad_norm(double max_norm);
  // Updates the owned parameters at learning rate `lr`, writes them back to the parameters, zeroes all grads.
  void step(double lr);
  void zero_grad();

  // "<name>.exp_avg", ".exp_avg_sq", ".step" and (low-precision params) ".master" of the owned parameters.
  std::vector<std::pair<std::string, torch::Tensor>> state() const;
  // Restores state() output (same parameters and ownership); fails naming a missing or mis-shaped tensor.
  Status load_state(const std::map<std::string, torch::Tensor>& tensors);

 private:
  void update(const std::vector<std::size_t>& which, double lr, double weight_decay);
  // The owned low-precision parameters the one-pass kernel updated (empty: none; the torch path runs).
  std::vector<std::size_t> one_pass_update(double lr);
  // Pending gradients copied into their float32 buffers (one multi-tensor kernel).
  void materialize_pending();
  // Each parameter's gradient as it stands: a pending one as the backward left it, else grads()'s.
  std::vector<torch::Tensor> current_grads();
  std::vector<NamedParam> params_;
  AdamWOptions options_;
  std::vector<bool> owned_;
  std::vector<torch::Tensor> grad32_;   // fp32 accumulation (for fp32 params: undefined, .grad is used)
  // grad32_[i] holds nothing of this step yet: the next accumulate_grads copies instead of adding (one cast
  // kernel instead of a fill and a mixed-dtype add per parameter; 19 of 172 GPU ms of a 1.5B SFT step).
  std::vector<bool> grad32_stale_;
  // With one_pass_kernel: the low-precision gradient of the only backward since the step, kept as it is (the
  // kernel reads it); a second backward copies it into grad32_ first.
  std::vector<torch::Tensor> pending_;
  int64_t host_step_ = -1;  // the owned parameters' step count, read from steps_ once (-1: not yet)
  torch::Tensor
      grad_scale_;  // set by clip_grad_norm for the fused update (undefined: none); step() clears it
  std::vector<torch::Tensor> master_;   // fp32 master (owned params; the param itself when it is fp32)
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_, steps_;  // owned params only
};

}  // namespace musacoder::train
