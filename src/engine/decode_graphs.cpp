#include "engine/decode_graphs.h"

#include <algorithm>

#include "core/check.h"

#ifdef MUSACODER_ENGINE_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace musacoder::engine {

#ifdef MUSACODER_ENGINE_CUDA
struct DecodeGraphs::Graph {
  at::cuda::CUDAGraph graph;
  torch::Tensor packed;  // the static input
  torch::Tensor logits;  // the static output
};
bool DecodeGraphs::available() { return true; }
#else
struct DecodeGraphs::Graph {};
bool DecodeGraphs::available() { return false; }
#endif

DecodeGraphs::DecodeGraphs(std::vector<int64_t> buckets, int64_t max_blocks, torch::Device device, Forward forward)
    : buckets_(std::move(buckets)), max_blocks_(max_blocks), device_(device), forward_(std::move(forward)) {
  std::sort(buckets_.begin(), buckets_.end());
  buckets_.erase(std::unique(buckets_.begin(), buckets_.end()), buckets_.end());
  std::erase_if(buckets_, [](int64_t b) { return b <= 0; });
  graphs_.resize(buckets_.size());
}

DecodeGraphs::~DecodeGraphs() = default;

int64_t DecodeGraphs::bucket_for(int64_t batch) const {
  auto it = std::lower_bound(buckets_.begin(), buckets_.end(), batch);
  return it == buckets_.end() ? 0 : *it;
}

void DecodeGraphs::reset() {
  for (auto& g : graphs_) g.reset();
}

torch::Tensor DecodeGraphs::run(int64_t bucket, const torch::Tensor& packed, const torch::Tensor& ids) {
  auto it = std::lower_bound(buckets_.begin(), buckets_.end(), bucket);
  MC_CHECK(it != buckets_.end() && *it == bucket);
  auto& g = graphs_[static_cast<std::size_t>(it - buckets_.begin())];
#ifdef MUSACODER_ENGINE_CUDA
  const int64_t b = bucket;
  auto call = [&](const torch::Tensor& p) {
    return forward_(p.narrow(0, 0, b), p.narrow(0, b, b), p.narrow(0, 2 * b, b),
                    p.narrow(0, 4 * b, b * max_blocks_).view({b, max_blocks_}).to(torch::kInt),
                    p.narrow(0, 3 * b, b).to(torch::kInt));
  };
  const bool capture = !g;
  if (capture) {
    g = std::make_unique<Graph>();
    g->packed = packed.clone();
  } else {
    g->packed.copy_(packed);
  }
  if (ids.defined()) g->packed.narrow(0, 0, ids.size(0)).copy_(ids);
  if (capture) {
    // Capture with this step's real inputs: the warm-up run writes the same K/V the replay writes again.
    auto current = c10::cuda::getCurrentCUDAStream();
    auto stream = c10::cuda::getStreamFromPool();
    at::cuda::CUDAEvent inputs_ready;
    inputs_ready.record(current);
    inputs_ready.block(stream);
    {
      c10::cuda::CUDAStreamGuard guard(stream);
      call(g->packed);  // warm-up: lazy initialisations happen outside the capture
      stream.synchronize();
      if (pool_.first == 0 && pool_.second == 0) pool_ = at::cuda::graph_pool_handle();
      g->graph.capture_begin(pool_);
      g->logits = call(g->packed);
      g->graph.capture_end();
    }
    at::cuda::CUDAEvent captured;
    captured.record(stream);
    captured.block(current);
  }
  g->graph.replay();
  return g->logits;
#else
  (void)packed;
  (void)ids;
  (void)g;
  MC_CHECK(false && "DecodeGraphs::run needs a CUDA build");
  return {};
#endif
}

}  // namespace musacoder::engine
