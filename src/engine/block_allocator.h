// BlockAllocator: reference-counted ids of fixed-size cache blocks (KV pages or recurrent-state slots).
// Id 0 is the null block: never handed out, it absorbs the writes of padding rows in captured CUDA graphs.
// A block shared by several sequences (prefix sharing) has ref_count > 1 and must be copied before a write
// (copy-on-write is the cache's job; the allocator only counts). Not thread-safe: the engine thread owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace musacoder::engine {

class BlockAllocator {
 public:
  // Ids [1, num_blocks) are allocatable; requires num_blocks >= 2.
  explicit BlockAllocator(int32_t num_blocks);

  std::optional<int32_t> allocate();  // ref_count 1; nullopt when none is free
  void retain(int32_t block);         // one more owner
  void release(int32_t block);        // one owner fewer; free at 0
  int32_t ref_count(int32_t block) const;
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t num_allocatable() const { return static_cast<int32_t>(refs_.size()) - 1; }

 private:
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first
  std::vector<int32_t> refs_;
};

}  // namespace musacoder::engine
