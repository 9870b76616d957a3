// The CUDA paged decode attention kernel (paged_attention_cuda.cu) and its libtorch wrapper
// (paged_attention_cuda_torch.cpp). The launcher below takes raw pointers so the .cu needs no libtorch
// headers; only CUDA builds of libtorch compile the wrapper (MUSACODER_ENGINE_CUDA).
//
// Algorithm (flash-decoding, GQA-aware): the grid is (partitions, kv heads × runs of at most 16 of their
// query heads, sequences), so each block reads a partition's K and V rows once for every query head of its kv
// head. A block of 128 threads streams its partition through two shared-memory stages of 32 positions
// (cp.async: the next tile's rows are in flight while this one is used); per tile the logits (4 lanes per
// position), an online-softmax update (a warp per head) and Σ p·v (threads over 16-byte chunks of the output,
// heads spread over the rest). It writes each head's unnormalised output, max and sum for the partition; the
// last block of a (sequence, head run) to finish — counted by an atomic ticket — merges the partitions (one
// kernel a layer). Without ticket counters (PagedDecodeArgs::counters) a second kernel merges. The partition
// size follows the launch's shape (paged_decode_partition_size): small when few (sequence, kv head) pairs
// would leave most multiprocessors idle. Positions beyond a sequence's context are never read, so padding
// rows of a graph (context 1 on the null block) cost one position.
#pragma once

#include <cstdint>

namespace musacoder::engine {

constexpr int kPagedDecodeMaxPartition = 256;  // positions per block at most
constexpr int64_t kPagedDecodeCounters = 1 << 16;  // ticket counters per device

struct PagedDecodeArgs {
  void* out = nullptr;             // (B, H, D), q's dtype
  const void* q = nullptr;         // (B, H, D) contiguous
  const void* k_pages = nullptr;   // (num_blocks, block_size, kv_heads, D) contiguous
  const void* v_pages = nullptr;
  const int32_t* block_tables = nullptr;  // (B, max_blocks) contiguous
  const int32_t* context_lens = nullptr;  // (B)
  float* partial_out = nullptr;    // (B, H, partitions, D) workspace
  float* partial_max = nullptr;    // (B, H, partitions)
  float* partial_sum = nullptr;    // (B, H, partitions)
  // (B, kv heads × runs of kMaxGroup query heads) int32, all 0 (paged_decode_counters): the partition blocks
  // of each (sequence, head run) take tickets, the last merges and sets its counter back to 0. null: a merge
  // kernel instead.
  int* counters = nullptr;
  int batch = 0, heads = 0, kv_heads = 0, head_dim = 0, block_size = 0, max_blocks = 0, partitions = 0;
  int partition_size =
      kPagedDecodeMaxPartition;  // positions per partition: a multiple of 32, at most the max
  float scale = 1.0f;
  int dtype = 0;  // 0 float32, 1 float16, 2 bfloat16
};

bool paged_decode_supports_head_dim(int head_dim);
// The partition size for a launch of this shape: 64, 128 or 256 positions as the blocks per partition
// (batch × kv heads × runs of 16 query heads) grow. Depends only on shapes, so a CUDA graph can capture it.
int paged_decode_partition_size(int batch, int heads, int kv_heads);
// Returns the cudaError_t of the launches (0: success). stream: a cudaStream_t.
int paged_decode_launch(const PagedDecodeArgs& args, void* stream);
// Ticket counters a launch of this shape needs (PagedDecodeArgs::counters).
int64_t paged_decode_counter_count(int batch, int heads, int kv_heads);

}  // namespace musacoder::engine

#if defined(MUSACODER_ENGINE_CUDA) && !defined(__CUDACC__)
#include <torch/torch.h>

#include "model/kernel_dtype.h"

namespace musacoder::engine {
// q (B, H, D) on CUDA; block_tables (B, max_blocks) int32; context_lens (B) int32, each >= 1 and
// <= max_blocks * block_size. Partitions cover max_blocks * block_size, so the launch shape depends only on
// the tensors' shapes (capturable in a CUDA graph). Runs on the current stream.
torch::Tensor paged_decode_cuda(const torch::Tensor& q, const torch::Tensor& k_pages, const torch::Tensor& v_pages,
                                const torch::Tensor& block_tables, const torch::Tensor& context_lens, double scale);
// The launchers' dtype code (PagedDecodeArgs::dtype, FusedArgs::dtype): model/kernel_dtype.h.
using model::kernel_dtype_code;
// The device's ticket counters (zeroed once, kept for the process: captured graphs hold their address), or
// null when a launch needs more than the kPagedDecodeCounters there are or the stream is capturing and they
// do not exist yet — then the merge kernel runs.
int* paged_decode_counters(int device, int64_t needed, void* stream);
// Free memory of a CUDA device in bytes (cudaMemGetInfo, after emptying the caching allocator's cache).
int64_t cuda_free_bytes(int device);
}  // namespace musacoder::engine
#endif
