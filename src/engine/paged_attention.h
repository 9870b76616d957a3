// Attention over the paged KV cache (layout in cache.h: (num_blocks, block_size, kv_heads, head_dim)).
//   decode:  one query token per sequence against its whole cached context. On CUDA our kernel
//            (paged_attention_cuda.cu, split over context partitions); on the CPU in float32 our loop kernel
//            (paged_attention_cpu.cpp); elsewhere, and as the kernel's
//            reference, SDPA over the context gathered from the pages (padded to the longest, masked).
//   prefill: a chunk of T new tokens of one sequence after `cached` earlier ones: SDPA over the gathered
//            context [0, cached + T) with the causal mask shifted by `cached`.
// Shapes: q (B, H, D) for decode, (T, H, D) for prefill; outputs have q's shape. GQA: H % kv_heads == 0.
#pragma once

#include <torch/torch.h>

namespace musacoder::engine {

// Writes k, v (N, kv_heads, D) into the pages at flat slots (N) int64 (slot = block * block_size + row).
void write_kv(torch::Tensor& k_pages, torch::Tensor& v_pages, const torch::Tensor& slots, const torch::Tensor& k,
              const torch::Tensor& v);

// block_tables (B, max_blocks) int32, context_lens (B) int32 on q's device; max_context: the largest
// context length (host value; the reference path pads to it).
torch::Tensor paged_decode_reference(const torch::Tensor& q, const torch::Tensor& k_pages,
                                     const torch::Tensor& v_pages, const torch::Tensor& block_tables,
                                     const torch::Tensor& context_lens, int64_t max_context, double scale);

// The CUDA kernel when q is on CUDA, this build has it, `allow_kernel` and head_dim is supported; the CPU
// kernel for float32 CPU tensors when `allow_kernel`; else the reference. Capturable in a CUDA graph (no host sync on the kernel path).
torch::Tensor paged_decode(const torch::Tensor& q, const torch::Tensor& k_pages, const torch::Tensor& v_pages,
                           const torch::Tensor& block_tables, const torch::Tensor& context_lens, int64_t max_context,
                           double scale, bool allow_kernel);

// The CPU kernel (paged_attention_cpu.cpp): float32 only, reads the pages through the block table.
// paged_decode takes it for float32 CPU tensors when `allow_kernel`.
bool cpu_decode_kernel_applies(const torch::Tensor& q, const torch::Tensor& k_pages);
torch::Tensor paged_decode_cpu(const torch::Tensor& q, const torch::Tensor& k_pages, const torch::Tensor& v_pages,
                               const torch::Tensor& block_tables, const torch::Tensor& context_lens, double scale);

// True when paged_decode would run the CUDA kernel for this head_dim on a CUDA tensor.
bool cuda_decode_kernel_available(int64_t head_dim);

// q (T, H, D); k_new, v_new (T, kv_heads, D) are the chunk's own keys/values (already in the pages);
// context_slots (cached + T) int64: the flat slots of positions [0, cached + T) (unused when cached == 0).
torch::Tensor prefill_attention(const torch::Tensor& q, const torch::Tensor& k_new, const torch::Tensor& v_new,
                                const torch::Tensor& k_pages, const torch::Tensor& v_pages,
                                const torch::Tensor& context_slots, int64_t cached, double scale);

}  // namespace musacoder::engine
