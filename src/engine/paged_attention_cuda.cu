// The paged decode attention kernels; see paged_attention_cuda.h for the algorithm and layouts.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>

#include "engine/cuda_dtype.cuh"
#include "engine/paged_attention_cuda.h"

namespace musacoder::engine {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxHeadDim = 256;

// One block: one (partition, head, sequence). VPL: head_dim / 32 values per lane.
template <typename T, int VPL>
__global__ void __launch_bounds__(kWarps * 32) partition_kernel(PagedDecodeArgs a) {
  const int part = blockIdx.x, head = blockIdx.y, seq = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int ctx = a.context_lens[seq];
  const int start = part * kPagedDecodePartitionSize;
  if (start >= ctx) return;  // the merge kernel reads only partitions below ctx
  const int end = min(ctx, start + kPagedDecodePartitionSize);
  const int D = VPL * 32, kvh = head / (a.heads / a.kv_heads);
  const T* q = static_cast<const T*>(a.q) + (static_cast<int64_t>(seq) * a.heads + head) * D + lane * VPL;
  float qv[VPL], acc[VPL];
#pragma unroll
  for (int i = 0; i < VPL; ++i) qv[i] = to_float(q[i]) * a.scale, acc[i] = 0.f;
  float m = -FLT_MAX, l = 0.f;
  const int32_t* table = a.block_tables + static_cast<int64_t>(seq) * a.max_blocks;
  const T* kp = static_cast<const T*>(a.k_pages);
  const T* vp = static_cast<const T*>(a.v_pages);
  for (int t = start + warp; t < end; t += kWarps) {
    const int64_t slot = static_cast<int64_t>(table[t / a.block_size]) * a.block_size + t % a.block_size;
    const int64_t off = (slot * a.kv_heads + kvh) * D + lane * VPL;
    float dot = 0.f;
#pragma unroll
    for (int i = 0; i < VPL; ++i) dot += qv[i] * to_float(kp[off + i]);
    const float s = warp_sum(dot);
    const float m_new = fmaxf(m, s);
    const float corr = __expf(m - m_new), p = __expf(s - m_new);
    l = l * corr + p;
#pragma unroll
    for (int i = 0; i < VPL; ++i) acc[i] = acc[i] * corr + p * to_float(vp[off + i]);
    m = m_new;
  }
  __shared__ float s_max[kWarps], s_sum[kWarps], s_acc[kWarps][kMaxHeadDim];
  if (lane == 0) s_max[warp] = m, s_sum[warp] = l;
#pragma unroll
  for (int i = 0; i < VPL; ++i) s_acc[warp][lane * VPL + i] = acc[i];
  __syncthreads();
  float gmax = -FLT_MAX;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) gmax = fmaxf(gmax, s_max[w]);
  const int64_t row = (static_cast<int64_t>(seq) * a.heads + head) * a.partitions + part;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float o = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += s_acc[w][d] * (s_sum[w] > 0.f ? __expf(s_max[w] - gmax) : 0.f);
    a.partial_out[row * D + d] = o;
  }
  if (threadIdx.x == 0) {
    float sum = 0.f;
    for (int w = 0; w < kWarps; ++w) sum += s_sum[w] > 0.f ? s_sum[w] * __expf(s_max[w] - gmax) : 0.f;
    a.partial_max[row] = gmax;
    a.partial_sum[row] = sum;
  }
}

// One block per (head, sequence): merges the partitions that hold context.
template <typename T>
__global__ void merge_kernel(PagedDecodeArgs a) {
  const int head = blockIdx.x, seq = blockIdx.y, D = a.head_dim;
  const int parts = (a.context_lens[seq] + kPagedDecodePartitionSize - 1) / kPagedDecodePartitionSize;
  const int64_t base = (static_cast<int64_t>(seq) * a.heads + head) * a.partitions;
  float gmax = -FLT_MAX;
  for (int p = 0; p < parts; ++p) gmax = fmaxf(gmax, a.partial_max[base + p]);
  float sum = 0.f;
  for (int p = 0; p < parts; ++p) sum += a.partial_sum[base + p] * __expf(a.partial_max[base + p] - gmax);
  const float inv = 1.f / sum;
  T* out = static_cast<T*>(a.out) + (static_cast<int64_t>(seq) * a.heads + head) * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float o = 0.f;
    for (int p = 0; p < parts; ++p) o += a.partial_out[(base + p) * D + d] * __expf(a.partial_max[base + p] - gmax);
    out[d] = from_float<T>(o * inv);
  }
}

template <typename T, int VPL>
cudaError_t launch_typed(const PagedDecodeArgs& a, cudaStream_t stream) {
  partition_kernel<T, VPL><<<dim3(a.partitions, a.heads, a.batch), kWarps * 32, 0, stream>>>(a);
  merge_kernel<T><<<dim3(a.heads, a.batch), 128, 0, stream>>>(a);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_dim(const PagedDecodeArgs& a, cudaStream_t stream) {
  switch (a.head_dim / 32) {
    case 1: return launch_typed<T, 1>(a, stream);
    case 2: return launch_typed<T, 2>(a, stream);
    case 3: return launch_typed<T, 3>(a, stream);
    case 4: return launch_typed<T, 4>(a, stream);
    case 5: return launch_typed<T, 5>(a, stream);
    case 6: return launch_typed<T, 6>(a, stream);
    case 7: return launch_typed<T, 7>(a, stream);
    case 8: return launch_typed<T, 8>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

bool paged_decode_supports_head_dim(int head_dim) {
  return head_dim % 32 == 0 && head_dim >= 32 && head_dim <= kMaxHeadDim;
}

int paged_decode_launch(const PagedDecodeArgs& a, void* stream) {
  if (!paged_decode_supports_head_dim(a.head_dim) || a.heads % a.kv_heads != 0) return cudaErrorInvalidValue;
  auto s = static_cast<cudaStream_t>(stream);
  switch (a.dtype) {
    case 0: return launch_dim<float>(a, s);
    case 1: return launch_dim<__half>(a, s);
    case 2: return launch_dim<__nv_bfloat16>(a, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace musacoder::engine
