// The paged decode attention kernels; see paged_attention_cuda.h for the algorithm and layouts.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>

#include "engine/cuda_dtype.cuh"
#include "engine/paged_attention_cuda.h"

namespace musacoder::engine {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kGroup = 8;  // lanes per position in the logits pass
constexpr int kMaxHeadDim = 256;

// n consecutive elements of T at p (8-byte aligned) as floats, in 8-byte loads.
template <typename T, int N>
__device__ __forceinline__ void load_floats(const T* p, float (&out)[N]) {
  constexpr int kPer = 8 / sizeof(T);
  static_assert(N % kPer == 0, "whole 8-byte loads");
#pragma unroll
  for (int i = 0; i < N; i += kPer) {
    const uint2 raw = *reinterpret_cast<const uint2*>(p + i);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int j = 0; j < kPer; ++j) out[i + j] = to_float(e[j]);
  }
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

// The sum (or max) of one value per warp, written to s by lane 0 of each warp; every thread gets the result.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float x, float* s) {
  x = kMax ? warp_max(x) : warp_sum(x);
  if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = x;
  __syncthreads();
  float r = s[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) r = kMax ? fmaxf(r, s[w]) : r + s[w];
  return r;
}

// One block: one (partition, head, sequence), VPL = head_dim / 32. Three passes over the partition's (at most
// kPagedDecodePartitionSize) positions, each with many independent loads in flight: (1) logits q·k, a group
// of kGroup lanes per position; (2) p = exp(logit − partition max) and their sum; (3) Σ p·v, threads covering
// four dims each and the block's rows of threads taking every R-th position, summed in shared memory.
template <typename T, int VPL>
__global__ void __launch_bounds__(kThreads) partition_kernel(PagedDecodeArgs a) {
  constexpr int D = VPL * 32, E = D / kGroup, kGroups = kThreads / kGroup;
  constexpr int TR = D / 4, R = kThreads / TR;  // pass 3: threads per row, rows of threads
  const int part = blockIdx.x, head = blockIdx.y, seq = blockIdx.z;
  const int ctx = a.context_lens[seq];
  const int start = part * kPagedDecodePartitionSize;
  if (start >= ctx) return;  // the merge kernel reads only partitions below ctx
  const int n = min(ctx - start, kPagedDecodePartitionSize);
  const int kvh = head / (a.heads / a.kv_heads);
  __shared__ float s_q[D], s_p[kPagedDecodePartitionSize], s_red[kWarps];
  __shared__ float s_acc[R][D];
  const T* q = static_cast<const T*>(a.q) + (static_cast<int64_t>(seq) * a.heads + head) * D;
  for (int d = threadIdx.x; d < D; d += kThreads) s_q[d] = to_float(q[d]) * a.scale;
  __syncthreads();
  const int32_t* table = a.block_tables + static_cast<int64_t>(seq) * a.max_blocks;
  auto row = [&](int t) {  // element offset of position start + t's row of kv head kvh
    const int pos = start + t;
    const int64_t slot = static_cast<int64_t>(table[pos / a.block_size]) * a.block_size + pos % a.block_size;
    return (slot * a.kv_heads + kvh) * D;
  };
  const T* kp = static_cast<const T*>(a.k_pages);
  const T* vp = static_cast<const T*>(a.v_pages);
  // (1) Every lane of the block runs every iteration (the shuffles need whole warps); a position past n is
  // skipped.
  const int group = threadIdx.x / kGroup, glane = threadIdx.x % kGroup;
  float qv[E];
#pragma unroll
  for (int i = 0; i < E; ++i) qv[i] = s_q[glane * E + i];
  float m = -FLT_MAX;
  for (int t0 = 0; t0 < n; t0 += kGroups) {
    const int t = t0 + group;
    float dot = 0.f;
    if (t < n) {
      float kv[E];
      load_floats<T, E>(kp + row(t) + glane * E, kv);
#pragma unroll
      for (int i = 0; i < E; ++i) dot += qv[i] * kv[i];
    }
#pragma unroll
    for (int o = kGroup / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    if (t < n) {
      if (glane == 0) s_p[t] = dot;
      m = fmaxf(m, dot);
    }
  }
  m = block_reduce<true>(m, s_red);  // its __syncthreads also publishes s_p
  // (2)
  float sum = 0.f;
  for (int t = threadIdx.x; t < n; t += kThreads) {
    const float p = __expf(s_p[t] - m);
    s_p[t] = p;
    sum += p;
  }
  __syncthreads();  // every thread has read s_red (the max) and written its s_p
  sum = block_reduce<false>(sum, s_red);
  // (3)
  const int r = threadIdx.x / TR, c = (threadIdx.x % TR) * 4;
  if (r < R) {
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
    for (int t = r; t < n; t += R) {
      float v[4];
      load_floats<T, 4>(vp + row(t) + c, v);
      const float p = s_p[t];
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[i] += p * v[i];
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) s_acc[r][c + i] = acc[i];
  }
  __syncthreads();
  const int64_t out_row = (static_cast<int64_t>(seq) * a.heads + head) * a.partitions + part;
  for (int d = threadIdx.x; d < D; d += kThreads) {
    float o = 0.f;
#pragma unroll
    for (int i = 0; i < R; ++i) o += s_acc[i][d];
    a.partial_out[out_row * D + d] = o;
  }
  if (threadIdx.x == 0) {
    a.partial_max[out_row] = m;
    a.partial_sum[out_row] = sum;
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
  partition_kernel<T, VPL><<<dim3(a.partitions, a.heads, a.batch), kThreads, 0, stream>>>(a);
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
