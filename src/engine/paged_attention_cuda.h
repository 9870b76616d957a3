// The CUDA paged decode attention kernel (paged_attention_cuda.cu) and its libtorch wrapper
// (paged_attention_cuda_torch.cpp). The launcher below takes raw pointers so the .cu needs no libtorch
// headers; only CUDA builds of libtorch compile the wrapper (MUSACODER_ENGINE_CUDA).
//
// Algorithm (flash-decoding): the grid is (partitions, heads, sequences); a block of 128 threads takes one
// partition of kPagedDecodePartitionSize context positions in three passes, each with many independent loads
// in flight (a serial online softmax, one position at a time per warp, left a batch-1 step latency-bound):
// the logits q·k (8 lanes per position, 16 positions at a time) into shared memory, then exp(logit − the
// partition's max) and their sum, then Σ p·v (threads over four dims each, rows of threads over positions).
// It writes the partition's unnormalised output, max and sum; a second kernel merges the partitions.
// Positions beyond a sequence's context are never read, so padding rows of a graph (context 1 on the null
// block) cost one position.
#pragma once

#include <cstdint>

namespace musacoder::engine {

constexpr int kPagedDecodePartitionSize = 256;

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
  int batch = 0, heads = 0, kv_heads = 0, head_dim = 0, block_size = 0, max_blocks = 0, partitions = 0;
  float scale = 1.0f;
  int dtype = 0;  // 0 float32, 1 float16, 2 bfloat16
};

bool paged_decode_supports_head_dim(int head_dim);
// Returns the cudaError_t of the launches (0: success). stream: a cudaStream_t.
int paged_decode_launch(const PagedDecodeArgs& args, void* stream);

}  // namespace musacoder::engine

#if defined(MUSACODER_ENGINE_CUDA) && !defined(__CUDACC__)
#include <torch/torch.h>

namespace musacoder::engine {
// q (B, H, D) on CUDA; block_tables (B, max_blocks) int32; context_lens (B) int32, each >= 1 and
// <= max_blocks * block_size. Partitions cover max_blocks * block_size, so the launch shape depends only on
// the tensors' shapes (capturable in a CUDA graph). Runs on the current stream.
torch::Tensor paged_decode_cuda(const torch::Tensor& q, const torch::Tensor& k_pages, const torch::Tensor& v_pages,
                                const torch::Tensor& block_tables, const torch::Tensor& context_lens, double scale);
// The launchers' dtype code of t (PagedDecodeArgs::dtype, FusedArgs::dtype): 0 float32, 1 float16, 2 bfloat16;
// any other dtype fails a TORCH_CHECK whose message starts with `who`.
int kernel_dtype_code(const torch::Tensor& t, const char* who);
// Free memory of a CUDA device in bytes (cudaMemGetInfo, after emptying the caching allocator's cache).
int64_t cuda_free_bytes(int device);
}  // namespace musacoder::engine
#endif
