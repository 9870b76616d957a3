// libtorch side of the paged decode kernel (CUDA builds only): checks, workspace, current stream.
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <array>
#include <mutex>

#include "engine/paged_attention_cuda.h"

namespace musacoder::engine {

int* paged_decode_counters(int device, int64_t needed, void* stream) {
  static std::mutex mu;
  static std::array<int*, 64> counters{};  // per device, never freed: graphs captured with them replay later
  if (needed > kPagedDecodeCounters || device < 0 || device >= static_cast<int>(counters.size()))
    return nullptr;
  std::lock_guard lock(mu);
  int*& c = counters[static_cast<std::size_t>(device)];
  if (c != nullptr) return c;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capturing) != cudaSuccess ||
      capturing != cudaStreamCaptureStatusNone)
    return nullptr;  // no allocation inside a capture; the engine's eager warm-up step comes first anyway
  int* fresh = nullptr;
  if (cudaMalloc(&fresh, kPagedDecodeCounters * sizeof(int)) != cudaSuccess) return nullptr;
  if (cudaMemset(fresh, 0, kPagedDecodeCounters * sizeof(int)) != cudaSuccess) {
    cudaFree(fresh);
    return nullptr;
  }
  return c = fresh;
}

torch::Tensor paged_decode_cuda(const torch::Tensor& q, const torch::Tensor& k_pages, const torch::Tensor& v_pages,
                                const torch::Tensor& block_tables, const torch::Tensor& context_lens, double scale) {
  TORCH_CHECK(q.is_cuda() && q.dim() == 3 && k_pages.dim() == 4, "paged_decode_cuda: bad shapes");
  TORCH_CHECK(block_tables.scalar_type() == torch::kInt && context_lens.scalar_type() == torch::kInt,
              "paged_decode_cuda: block_tables and context_lens must be int32");
  TORCH_CHECK(k_pages.scalar_type() == q.scalar_type(), "paged_decode_cuda: pages and q differ in dtype");
  auto qc = q.contiguous();
  auto tables = block_tables.contiguous();
  const int64_t B = q.size(0), H = q.size(1), D = q.size(2), kv_heads = k_pages.size(2);
  TORCH_CHECK(kv_heads > 0 && H % kv_heads == 0, "paged_decode_cuda: heads must be a multiple of kv heads");
  const int partition_size =
      paged_decode_partition_size(static_cast<int>(B), static_cast<int>(H), static_cast<int>(kv_heads));
  const int64_t partitions = (tables.size(1) * k_pages.size(1) + partition_size - 1) / partition_size;
  auto f32 = q.options().dtype(torch::kFloat);
  auto partial_out = torch::empty({B, H, partitions, D}, f32);
  auto partial_max = torch::empty({B, H, partitions}, f32);
  auto partial_sum = torch::empty({B, H, partitions}, f32);
  auto out = torch::empty_like(qc);
  PagedDecodeArgs a;
  a.out = out.data_ptr();
  a.q = qc.data_ptr();
  a.k_pages = k_pages.data_ptr();
  a.v_pages = v_pages.data_ptr();
  a.block_tables = tables.data_ptr<int32_t>();
  a.context_lens = context_lens.data_ptr<int32_t>();
  a.partial_out = partial_out.data_ptr<float>();
  a.partial_max = partial_max.data_ptr<float>();
  a.partial_sum = partial_sum.data_ptr<float>();
  a.batch = static_cast<int>(B), a.heads = static_cast<int>(H), a.kv_heads = static_cast<int>(kv_heads);
  a.head_dim = static_cast<int>(D), a.block_size = static_cast<int>(k_pages.size(1));
  a.max_blocks = static_cast<int>(tables.size(1)), a.partitions = static_cast<int>(partitions);
  a.partition_size = partition_size;
  a.scale = static_cast<float>(scale);
  a.dtype = kernel_dtype_code(q, "paged_decode_cuda");
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  a.counters =
      paged_decode_counters(q.get_device(), paged_decode_counter_count(a.batch, a.heads, a.kv_heads), stream);
  const int err = paged_decode_launch(a, stream);
  TORCH_CHECK(err == 0, "paged_decode_cuda: launch failed (cudaError ", err, ")");
  return out;
}

int64_t cuda_free_bytes(int device) {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device < 0 ? 0 : device));
  c10::cuda::CUDACachingAllocator::emptyCache();
  size_t free = 0, total = 0;
  TORCH_CHECK(cudaMemGetInfo(&free, &total) == cudaSuccess, "cudaMemGetInfo failed");
  return static_cast<int64_t>(free);
}

}  // namespace musacoder::engine
