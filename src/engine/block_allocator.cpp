#include "engine/block_allocator.h"

#include "core/check.h"

namespace musacoder::engine {

BlockAllocator::BlockAllocator(int32_t num_blocks) : refs_(static_cast<std::size_t>(num_blocks), 0) {
  MC_CHECK(num_blocks >= 2);
  free_.reserve(static_cast<std::size_t>(num_blocks));
  for (int32_t b = num_blocks - 1; b >= 1; --b) free_.push_back(b);
}

std::optional<int32_t> BlockAllocator::allocate() {
  if (free_.empty()) return std::nullopt;
  int32_t b = free_.back();
  free_.pop_back();
  refs_[static_cast<std::size_t>(b)] = 1;
  return b;
}

void BlockAllocator::retain(int32_t block) {
  MC_CHECK(block >= 1 && block < static_cast<int32_t>(refs_.size()) && refs_[block] > 0);
  ++refs_[static_cast<std::size_t>(block)];
}

void BlockAllocator::release(int32_t block) {
  MC_CHECK(block >= 1 && block < static_cast<int32_t>(refs_.size()) && refs_[block] > 0);
  if (--refs_[static_cast<std::size_t>(block)] == 0) free_.push_back(block);
}

int32_t BlockAllocator::ref_count(int32_t block) const {
  MC_CHECK(block >= 0 && block < static_cast<int32_t>(refs_.size()));
  return refs_[static_cast<std::size_t>(block)];
}

}  // namespace musacoder::engine
