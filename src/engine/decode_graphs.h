// DecodeGraphs: CUDA graphs of the decode forward, one per batch-size bucket, captured on first use and
// sharing one memory pool. Inputs are copied into the graph's static tensors from one packed int64 device
// tensor per step (no host sync). Only CUDA builds of libtorch capture (available()); elsewhere the runner
// never creates one.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

namespace musacoder::engine {

class DecodeGraphs {
 public:
  // ids, positions, slots (b) int64; block tables (b, max_blocks) int32; context_lens (b) int32 -> logits (b, V).
  using Forward = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                              const torch::Tensor&, const torch::Tensor&)>;
  static bool available();  // this build can capture CUDA graphs

  DecodeGraphs(std::vector<int64_t> buckets, int64_t max_blocks, torch::Device device, Forward forward);
  ~DecodeGraphs();
  int64_t bucket_for(int64_t batch) const;  // the smallest bucket >= batch; 0: none
  int64_t max_blocks() const { return max_blocks_; }
  // packed: ids b, positions b, slots b, context_lens b, block tables b * max_blocks (int64, on the device);
  // ids (d <= b int64 on the device), when defined, replace packed's first d ids (the tokens a multi-step
  // decode drew on the device in its previous step). Returns the graph's output logits (b, V): valid until
  // the next run().
  torch::Tensor run(int64_t bucket, const torch::Tensor& packed, const torch::Tensor& ids = {});
  void reset();  // drops every captured graph

 private:
  struct Graph;
  std::vector<int64_t> buckets_;
  int64_t max_blocks_;
  torch::Device device_;
  Forward forward_;
  std::vector<std::unique_ptr<Graph>> graphs_;  // per bucket index; null until captured
  std::pair<unsigned long long, unsigned long long> pool_{0, 0};  // the shared graph memory pool
};

}  // namespace musacoder::engine
