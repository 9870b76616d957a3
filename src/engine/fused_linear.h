// Several Linear layers that read the same input, run as one matmul: the q/k/v projections of an attention
// layer, the gate/up projections of an MLP. Their weights (and biases) become row blocks — views — of one
// tensor, so the model keeps its modules and parameters (an optimizer's in-place step, a checkpoint save, the
// training forward all see the parts as before) while the engine multiplies once: fewer kernels per decode
// step and one larger matrix-vector product instead of two or three small ones.
//
// If anything replaces a part's storage (Module::to, set_data, a load that assigns new tensors), the parts
// stop being views of the fused tensor; refresh() notices (a pointer comparison per part) and fuses again
// from the parts' current values, so the engine never multiplies by stale weights. Parts that cannot share
// one tensor (different dtypes or devices, bias on some but not all) stay separate and run one by one.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace musacoder::engine {

class FusedLinear {
 public:
  FusedLinear() = default;
  // enabled false: the parts stay as they are and run one by one.
  explicit FusedLinear(std::vector<torch::nn::Linear> parts, bool enabled = true);

  // One output per part, in order: views (N, out_i) of the fused product (not contiguous when fused).
  std::vector<torch::Tensor> operator()(const torch::Tensor& x) const;
  // Fuses again if some part no longer views the fused tensor; true when it did (the fused tensor moved, so
  // CUDA graphs captured over it must be captured again).
  bool refresh();
  bool fused() const { return fusable_; }
  // When fused: the fused weight (sum of outs, in) and bias (or undefined), and a product y (N, sum of outs)
  // computed from them elsewhere (decode_linear_cuda.h), split as operator() splits its own.
  const torch::Tensor& weight() const { return weight_; }
  const torch::Tensor& bias() const { return bias_; }
  std::vector<torch::Tensor> split(const torch::Tensor& y) const { return y.split_with_sizes(sizes_, -1); }

 private:
  void fuse();
  bool intact() const;

  std::vector<torch::nn::Linear> parts_;
  std::vector<int64_t> sizes_;
  torch::Tensor weight_, bias_;
  std::vector<const void*> views_;  // where each part's weight, then each part's bias, was pointed by fuse()
  bool fusable_ = false;
};

}  // namespace musacoder::engine
