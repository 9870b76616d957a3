#include "engine/cache.h"

#include "core/check.h"

namespace musacoder::engine {
namespace {

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

CachePool::CachePool(std::vector<LayerCacheSpec> layers, int64_t block_size, int32_t num_blocks,
                     int32_t num_state_slots, torch::TensorOptions options)
    : layers_(std::move(layers)), block_size_(block_size), blocks_(num_blocks), slots_(std::max(num_state_slots, 2)) {
  options = options.requires_grad(false);
  for (const LayerCacheSpec& l : layers_) {
    std::vector<torch::Tensor> states;
    if (l.kind == LayerKind::kAttention) {
      k_.push_back(torch::zeros({num_blocks, block_size, l.kv_heads, l.head_dim}, options));
      v_.push_back(torch::zeros({num_blocks, block_size, l.kv_heads, l.head_dim}, options));
    } else {
      has_state_layers_ = true;
      k_.emplace_back();
      v_.emplace_back();
      for (const auto& shape : l.state_shapes) {
        std::vector<int64_t> full{std::max(num_state_slots, 2)};
        full.insert(full.end(), shape.begin(), shape.end());
        states.push_back(torch::zeros(full, options));
      }
    }
    state_.push_back(std::move(states));
  }
}

int64_t CachePool::bytes_per_block(const std::vector<LayerCacheSpec>& layers, int64_t block_size,
                                   torch::ScalarType dtype) {
  int64_t per = 0;
  for (const auto& l : layers)
    if (l.kind == LayerKind::kAttention) per += 2 * block_size * l.kv_heads * l.head_dim;
  return per * static_cast<int64_t>(c10::elementSize(dtype));
}

int64_t CachePool::bytes_per_state_slot(const std::vector<LayerCacheSpec>& layers, torch::ScalarType dtype) {
  int64_t per = 0;
  for (const auto& l : layers)
    for (const auto& s : l.state_shapes) per += numel(s);
  return per * static_cast<int64_t>(c10::elementSize(dtype));
}

int32_t CachePool::blocks_needed(const SequenceCache& seq, int64_t from, int64_t new_len) const {
  if (new_len <= from) return 0;
  const int64_t have = static_cast<int64_t>(seq.blocks.size());
  const int64_t want = (new_len + block_size_ - 1) / block_size_;
  int64_t n = std::max<int64_t>(0, want - have);
  const int64_t first = from / block_size_;
  if (first < have && blocks_.ref_count(seq.blocks[static_cast<std::size_t>(first)]) > 1) ++n;
  return static_cast<int32_t>(n);
}

bool CachePool::prepare_write(SequenceCache& seq, int64_t from, int64_t new_len) {
  if (blocks_needed(seq, from, new_len) > blocks_.num_free()) return false;
  if (new_len <= from) return true;
  const int64_t first = from / block_size_;
  if (first < static_cast<int64_t>(seq.blocks.size())) {
    int32_t& b = seq.blocks[static_cast<std::size_t>(first)];
    if (blocks_.ref_count(b) > 1) {
      int32_t copy = *blocks_.allocate();
      copy_block(b, copy);
      blocks_.release(b);
      b = copy;
    }
  }
  const int64_t want = (new_len + block_size_ - 1) / block_size_;
  while (static_cast<int64_t>(seq.blocks.size()) < want) seq.blocks.push_back(*blocks_.allocate());
  return true;
}

bool CachePool::ensure_state_slot(SequenceCache& seq) {
  if (!has_state_layers_ || seq.state_slot != 0) return true;
  auto slot = slots_.allocate();
  if (!slot) return false;
  for (auto& states : state_)
    for (auto& s : states) s[*slot].zero_();
  seq.state_slot = *slot;
  return true;
}

bool CachePool::fork(const SequenceCache& parent, int64_t length, SequenceCache& child) {
  MC_CHECK(child.blocks.empty() && child.state_slot == 0);
  if (has_state_layers_) {
    auto slot = slots_.allocate();
    if (!slot) return false;
    copy_slot(parent.state_slot, *slot);
    child.state_slot = *slot;
  }
  const std::size_t shared = static_cast<std::size_t>((length + block_size_ - 1) / block_size_);
  MC_CHECK(shared <= parent.blocks.size());
  for (std::size_t i = 0; i < shared; ++i) {
    blocks_.retain(parent.blocks[i]);
    child.blocks.push_back(parent.blocks[i]);
  }
  return true;
}

void CachePool::release(SequenceCache& seq) {
  for (int32_t b : seq.blocks) blocks_.release(b);
  seq.blocks.clear();
  if (seq.state_slot != 0) slots_.release(seq.state_slot);
  seq.state_slot = 0;
}

void CachePool::copy_block(int32_t from, int32_t to) {
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l].kind != LayerKind::kAttention) continue;
    k_[l][to].copy_(k_[l][from]);
    v_[l][to].copy_(v_[l][from]);
  }
}

void CachePool::copy_slot(int32_t from, int32_t to) {
  for (auto& states : state_)
    for (auto& s : states) s[to].copy_(s[from]);
}

}  // namespace musacoder::engine
