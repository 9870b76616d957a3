// CachePool: the per-sequence memory of every layer, in one place, for both kinds of token mixer:
//   attention layers          paged K/V: k(l), v(l) are (num_blocks, block_size, kv_heads, head_dim); a
//                             sequence's block table maps position p to row p % block_size of block
//                             blocks[p / block_size];
//   linear-attention layers   (Gated DeltaNet in Qwen3.5) a fixed-size state per sequence: state(l)[i] is
//                             (num_state_slots, shape_i...) — e.g. the causal conv's last k-1 inputs and the
//                             recurrent matrix S — and a sequence owns one slot index for all such layers.
// Prefix sharing: fork() gives a child the parent's blocks (reference counted, copied on the first write
// into a shared block by prepare_write) and a copy of the parent's state slot (a snapshot: recurrent state
// cannot be shared, it is overwritten every token). Not thread-safe: the engine thread owns it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "engine/block_allocator.h"

namespace musacoder::engine {

enum class LayerKind { kAttention, kLinearAttention };

struct LayerCacheSpec {
  LayerKind kind = LayerKind::kAttention;
  int64_t kv_heads = 0, head_dim = 0;              // attention layers
  std::vector<std::vector<int64_t>> state_shapes;  // linear-attention layers: one shape per state tensor
};

struct SequenceCache {
  std::vector<int32_t> blocks;  // the block table
  int32_t state_slot = 0;       // 0: none yet (slot 0 is the null slot)
};

class CachePool {
 public:
  // num_blocks includes the null block 0; num_state_slots includes the null slot 0 (ignored without
  // linear-attention layers). Tensors are zero-initialised with `options` (device, dtype).
  CachePool(std::vector<LayerCacheSpec> layers, int64_t block_size, int32_t num_blocks, int32_t num_state_slots,
            torch::TensorOptions options);
  static int64_t bytes_per_block(const std::vector<LayerCacheSpec>& layers, int64_t block_size,
                                 torch::ScalarType dtype);
  static int64_t bytes_per_state_slot(const std::vector<LayerCacheSpec>& layers, torch::ScalarType dtype);

  // Blocks prepare_write(seq, from, new_len) would take from the free list.
  int32_t blocks_needed(const SequenceCache& seq, int64_t from, int64_t new_len) const;
  // Makes positions [from, new_len) writable: appends blocks, and copies a shared block the range starts in
  // (copy-on-write). Returns false, changing nothing, when too few blocks are free.
  bool prepare_write(SequenceCache& seq, int64_t from, int64_t new_len);
  // Gives `seq` a state slot when the model has linear-attention layers and it has none (zeroed: a fresh
  // sequence's state). False when none is free.
  bool ensure_state_slot(SequenceCache& seq);
  bool has_state_layers() const { return has_state_layers_; }
  // child (empty) shares parent's blocks covering positions [0, length) and gets a copy of its state slot.
  // False when no state slot is free (then child is unchanged).
  bool fork(const SequenceCache& parent, int64_t length, SequenceCache& child);
  void release(SequenceCache& seq);  // gives back every block and the slot

  torch::Tensor& k(int layer) { return k_[static_cast<std::size_t>(layer)]; }
  torch::Tensor& v(int layer) { return v_[static_cast<std::size_t>(layer)]; }
  std::vector<torch::Tensor>& state(int layer) { return state_[static_cast<std::size_t>(layer)]; }
  const std::vector<LayerCacheSpec>& layers() const { return layers_; }
  int64_t block_size() const { return block_size_; }
  BlockAllocator& blocks() { return blocks_; }
  const BlockAllocator& blocks() const { return blocks_; }
  BlockAllocator& state_slots() { return slots_; }

 private:
  void copy_block(int32_t from, int32_t to);
  void copy_slot(int32_t from, int32_t to);

  std::vector<LayerCacheSpec> layers_;
  int64_t block_size_;
  BlockAllocator blocks_, slots_;
  bool has_state_layers_ = false;
  std::vector<torch::Tensor> k_, v_;               // per layer; undefined for linear-attention layers
  std::vector<std::vector<torch::Tensor>> state_;  // per layer; empty for attention layers
};

}  // namespace musacoder::engine
