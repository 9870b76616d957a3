// The paged decode attention kernels; see paged_attention_cuda.h for the algorithm and layouts.
//
// tests/unit/engine/paged_decode_emulated_test.cpp includes this file on the CPU with
// MUSACODER_CUDA_EMULATION defined (after tests/support/cuda_emulation.h, which supplies threads, barriers,
// shuffles and the element types): the kernels below are then run as written, and the launchers are left out.
#ifndef MUSACODER_CUDA_EMULATION
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include "core/cuda_dtype.cuh"
#endif

#include <cfloat>

#include "engine/paged_attention_cuda.h"

namespace musacoder::engine {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = 32;      // positions per shared-memory stage (one per lane in the softmax)
constexpr int kLanes = 4;      // lanes per position in the logits: kThreads / kLanes == kTile
constexpr int kMaxGroup = 16;  // query heads per block; a larger GQA group is split over blocks
constexpr int kMaxHeadDim = 256;
static_assert(kThreads / kLanes == kTile && kTile == 32, "one logit per thread group, one position per lane");

// Shared memory of one block: two stages of K and V tiles (T), then q, the tile's logits/probabilities, and
// per head the running max, sum and this tile's rescale factor (float), then the partition's cache slots.
struct Smem {
  int head_dim, elem_bytes, partition;
  __host__ __device__ size_t kv_bytes() const { return size_t(4) * kTile * head_dim * elem_bytes; }
  __host__ __device__ size_t float_count() const { return size_t(kMaxGroup) * (head_dim + kTile + 3); }
  __host__ __device__ size_t bytes() const { return kv_bytes() + float_count() * 4 + size_t(partition) * 4; }
};

// 16 bytes of T as floats.
template <typename T>
__device__ __forceinline__ void chunk_floats(const T* p, float (&out)[16 / sizeof(T)]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int j = 0; j < int(16 / sizeof(T)); ++j) out[j] = to_float(e[j]);
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

// Runs of at most kMaxGroup query heads a kv head's group splits into (the grid's y is kv heads × runs).
__host__ __device__ inline int head_runs_per_kv_head(int heads, int kv_heads) {
  return (heads / kv_heads + kMaxGroup - 1) / kMaxGroup;
}

// Which query heads a block serves: kv head kvh's group, split into runs of at most kMaxGroup heads.
struct HeadRun {
  int kvh, head0, count;
  __device__ HeadRun(const PagedDecodeArgs& a, int y) {
    const int group = a.heads / a.kv_heads, splits = head_runs_per_kv_head(a.heads, a.kv_heads);
    kvh = y / splits;
    const int g0 = (y % splits) * kMaxGroup;
    head0 = kvh * group + g0;
    count = min(kMaxGroup, group - g0);
  }
};

// One block's view of its work: the partition's positions, its heads and the shared-memory arrays.
template <typename T, int D>
struct Block {
  static constexpr int E = 16 / sizeof(T), C = D / E;  // elements per 16-byte chunk, chunks per row
  const PagedDecodeArgs& a;
  HeadRun heads;
  int start, n;                  // the partition's first position and its count
  T* kv;                         // [2 stages][K, V][kTile][D]
  float *q, *p, *m, *l, *alpha;  // q [kMaxGroup][D] (scaled), p [kMaxGroup][kTile], m/l/alpha [kMaxGroup]
  int* slot;                     // [partition]: the cache slot of each position

  // Starts the asynchronous copy of tile `tile`'s K and V rows into its stage.
  __device__ void stage(int tile) const {
    T* dst = kv + (tile & 1) * 2 * kTile * D;
    const int t0 = tile * kTile, rows = min(kTile, n - t0), per_kv = rows * C;
    for (int i = threadIdx.x; i < 2 * per_kv; i += kThreads) {
      const int which = i >= per_kv, r = i - which * per_kv, t = r / C, c = r % C;
      const T* src = static_cast<const T*>(which ? a.v_pages : a.k_pages) +
                     (static_cast<int64_t>(slot[t0 + t]) * a.kv_heads + heads.kvh) * D + c * E;
      __pipeline_memcpy_async(dst + (which * kTile + t) * D + c * E, src, 16);
    }
    __pipeline_commit();
  }

  // p[g][t] = q_g · k_t for the tile's rows (−FLT_MAX past them): kLanes lanes per position, each holding
  // every kLanes-th chunk of the row in registers for all heads.
  __device__ void logits(const T* k, int rows) const {
    constexpr int CL = C / kLanes;
    const int t = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
    float kr[CL][E];
#pragma unroll
    for (int i = 0; i < CL; ++i) {
      if (t < rows) chunk_floats<T>(k + t * D + (lane + i * kLanes) * E, kr[i]);
    }
    for (int g = 0; g < heads.count; ++g) {
      float dot = 0.f;
      if (t < rows) {
#pragma unroll
        for (int i = 0; i < CL; ++i) {
          const float4* qv = reinterpret_cast<const float4*>(q + g * D + (lane + i * kLanes) * E);
#pragma unroll
          for (int j = 0; j < E / 4; ++j) {
            const float4 x = qv[j];
            dot +=
                x.x * kr[i][4 * j] + x.y * kr[i][4 * j + 1] + x.z * kr[i][4 * j + 2] + x.w * kr[i][4 * j + 3];
          }
        }
      }
#pragma unroll
      for (int o = kLanes / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      if (lane == 0) p[g * kTile + t] = t < rows ? dot : -FLT_MAX;
    }
  }

  // Online softmax over the tile, a warp per head and a lane per position: p becomes exp(logit − new max),
  // alpha the factor that rescales what the earlier tiles accumulated; m and l the running max and sum.
  __device__ void softmax(int rows) const {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int g = warp; g < heads.count; g += kWarps) {
      const float x = p[g * kTile + lane], m_old = m[g];
      const float m_new = fmaxf(m_old, warp_max(x));
      const float e = lane < rows ? __expf(x - m_new) : 0.f;
      p[g * kTile + lane] = e;
      const float sum = warp_sum(e);
      if (lane == 0) {
        alpha[g] = __expf(m_old - m_new);
        l[g] = l[g] * alpha[g] + sum;
        m[g] = m_new;
      }
    }
  }
};

// Σ p·v: thread (s, c) owns chunk c of the output of heads s, s + S, s + 2S, ... (S = kThreads / C).
template <typename T, int D>
struct Accumulator {
  using B = Block<T, D>;
  static constexpr int E = B::E, C = B::C, S = kThreads / C, HJ = (kMaxGroup + S - 1) / S;
  float acc[HJ][E] = {};
  const int s = threadIdx.x / C, c = threadIdx.x % C;

  __device__ void add(const B& b, const T* v, int rows) {
    if (s >= S) return;
#pragma unroll
    for (int j = 0; j < HJ; ++j) {
      const int g = s + j * S;
      const float f = g < b.heads.count ? b.alpha[g] : 0.f;
#pragma unroll
      for (int e = 0; e < E; ++e) acc[j][e] *= f;
    }
#pragma unroll 4
    for (int t = 0; t < rows; ++t) {
      float vr[E];
      chunk_floats<T>(v + t * D + c * E, vr);
#pragma unroll
      for (int j = 0; j < HJ; ++j) {
        const int g = s + j * S;
        if (g < b.heads.count) {
          const float pr = b.p[g * kTile + t];
#pragma unroll
          for (int e = 0; e < E; ++e) acc[j][e] += pr * vr[e];
        }
      }
    }
  }

  // The partition's unnormalised output, max and sum per head.
  __device__ void write(const B& b, int part) const {
    const PagedDecodeArgs& a = b.a;
    auto row = [&](int g) {
      return (static_cast<int64_t>(blockIdx.z) * a.heads + b.heads.head0 + g) * a.partitions + part;
    };
    if (s < S) {
#pragma unroll
      for (int j = 0; j < HJ; ++j) {
        const int g = s + j * S;
        if (g >= b.heads.count) continue;
        float4* o = reinterpret_cast<float4*>(a.partial_out + row(g) * D + c * E);
#pragma unroll
        for (int e = 0; e < E; e += 4)
          o[e / 4] = make_float4(acc[j][e], acc[j][e + 1], acc[j][e + 2], acc[j][e + 3]);
      }
    }
    const int g = static_cast<int>(threadIdx.x);
    if (g < b.heads.count) {
      a.partial_max[row(g)] = b.m[g];
      a.partial_sum[row(g)] = b.l[g];
    }
  }
};

// Merges the partitions that hold context for query heads head0 .. head0 + count - 1 of sequence seq: per
// head (a warp each) the global max and 1 / sum into gm and inv (shared, kMaxGroup each), then every output
// element. Reads the partials through L2 (__ldcg): other blocks wrote them.
template <typename T>
__device__ void merge_run(const PagedDecodeArgs& a, int seq, int head0, int count, float* gm, float* inv) {
  const int D = a.head_dim, parts = (a.context_lens[seq] + a.partition_size - 1) / a.partition_size;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  auto base = [&](int g) { return (static_cast<int64_t>(seq) * a.heads + head0 + g) * a.partitions; };
  for (int g = warp; g < count; g += blockDim.x / 32) {
    float mx = -FLT_MAX;
    for (int p = lane; p < parts; p += 32) mx = fmaxf(mx, __ldcg(a.partial_max + base(g) + p));
    mx = warp_max(mx);
    float sum = 0.f;
    for (int p = lane; p < parts; p += 32)
      sum += __ldcg(a.partial_sum + base(g) + p) * __expf(__ldcg(a.partial_max + base(g) + p) - mx);
    sum = warp_sum(sum);
    if (lane == 0) gm[g] = mx, inv[g] = 1.f / sum;
  }
  __syncthreads();
  T* out = static_cast<T*>(a.out) + (static_cast<int64_t>(seq) * a.heads + head0) * D;
  for (int i = threadIdx.x; i < count * D; i += blockDim.x) {
    const int g = i / D, d = i % D;
    float o = 0.f;
    for (int p = 0; p < parts; ++p)
      o +=
          __ldcg(a.partial_out + (base(g) + p) * D + d) * __expf(__ldcg(a.partial_max + base(g) + p) - gm[g]);
    out[i] = from_float<T>(o * inv[g]);
  }
}

// The ticket of a partition block that has written its partials: true for the last of its (sequence, head
// run) to finish, which then resets the counter for the next launch. Every thread's writes are fenced first.
__device__ bool last_to_finish(const PagedDecodeArgs& a, int seq, int ctx) {
  __shared__ int last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    int* counter = a.counters + static_cast<int64_t>(seq) * gridDim.y + blockIdx.y;
    const int parts = (ctx + a.partition_size - 1) / a.partition_size;
    last = atomicAdd(counter, 1) == parts - 1;
    if (last) atomicExch(counter, 0);
  }
  __syncthreads();
  if (last) __threadfence();  // the other blocks' partials, fenced before their tickets, are visible now
  return last;
}

// One block: one (partition, run of query heads of one kv head, sequence). K and V tiles of kTile positions
// stream through two shared-memory stages (the next tile's copy in flight while this one is used); per tile
// the logits, an online-softmax update and Σ p·v.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads) partition_kernel(PagedDecodeArgs a) {
  MC_DYNAMIC_SHARED(smem);
  const int part = blockIdx.x, seq = blockIdx.z, ctx = a.context_lens[seq];
  const int start = part * a.partition_size;
  if (start >= ctx) return;  // the merge kernel reads only partitions below ctx
  const Smem layout{D, int(sizeof(T)), a.partition_size};
  float* f = reinterpret_cast<float*>(smem + layout.kv_bytes());
  Block<T, D> b{a,
                HeadRun(a, blockIdx.y),
                start,
                min(ctx - start, a.partition_size),
                reinterpret_cast<T*>(smem),
                f,
                f + kMaxGroup * D,
                f + kMaxGroup * (D + kTile),
                f + kMaxGroup * (D + kTile + 1),
                f + kMaxGroup * (D + kTile + 2),
                reinterpret_cast<int*>(f + layout.float_count())};
  const T* q = static_cast<const T*>(a.q) + (static_cast<int64_t>(seq) * a.heads + b.heads.head0) * D;
  for (int i = threadIdx.x; i < b.heads.count * D; i += kThreads) b.q[i] = to_float(q[i]) * a.scale;
  const int32_t* table = a.block_tables + static_cast<int64_t>(seq) * a.max_blocks;
  for (int t = threadIdx.x; t < b.n; t += kThreads) {
    const int pos = start + t;
    b.slot[t] = table[pos / a.block_size] * a.block_size + pos % a.block_size;
  }
  if (threadIdx.x < kMaxGroup) b.m[threadIdx.x] = -FLT_MAX, b.l[threadIdx.x] = 0.f;
  __syncthreads();
  Accumulator<T, D> acc;
  const int tiles = (b.n + kTile - 1) / kTile;
  b.stage(0);
  for (int tile = 0; tile < tiles; ++tile) {
    if (tile + 1 < tiles) {
      b.stage(tile + 1);
      __pipeline_wait_prior(1);
    } else {
      __pipeline_wait_prior(0);
    }
    __syncthreads();  // this tile's rows, copied by every thread, are in shared memory
    const T* k = b.kv + (tile & 1) * 2 * kTile * D;
    const int rows = min(kTile, b.n - tile * kTile);
    b.logits(k, rows);
    __syncthreads();
    b.softmax(rows);
    __syncthreads();
    acc.add(b, k + kTile * D, rows);
    __syncthreads();  // the stage is refilled two tiles on; p is rewritten by the next tile
  }
  acc.write(b, part);
  if (a.counters == nullptr || !last_to_finish(a, seq, ctx)) return;
  merge_run<T>(a, seq, b.heads.head0, b.heads.count, b.m,
               b.l);  // m and l were read by write() before the fence
}

// One block per (head, sequence) when there are no ticket counters: merges the partitions that hold context.
template <typename T>
__global__ void merge_kernel(PagedDecodeArgs a) {
  __shared__ float gm[1], inv[1];
  merge_run<T>(a, blockIdx.y, blockIdx.x, 1, gm, inv);
}

#ifndef MUSACODER_CUDA_EMULATION
template <typename T, int D>
cudaError_t launch_typed(const PagedDecodeArgs& a, cudaStream_t stream) {
  // Above 48 KB a kernel needs its dynamic shared-memory limit raised, once (before any graph capture: the
  // engine's warm-up step runs the kernel eagerly first).
  static const cudaError_t raised =
      cudaFuncSetAttribute(partition_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(Smem{D, int(sizeof(T)), kPagedDecodeMaxPartition}.bytes()));
  if (raised != cudaSuccess) return raised;
  const int splits = head_runs_per_kv_head(a.heads, a.kv_heads);
  const size_t bytes = Smem{D, int(sizeof(T)), a.partition_size}.bytes();
  partition_kernel<T, D><<<dim3(a.partitions, a.kv_heads * splits, a.batch), kThreads, bytes, stream>>>(a);
  if (a.counters == nullptr) merge_kernel<T><<<dim3(a.heads, a.batch), 128, 0, stream>>>(a);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_dim(const PagedDecodeArgs& a, cudaStream_t stream) {
  switch (a.head_dim) {
    case 32:
      return launch_typed<T, 32>(a, stream);
    case 64:
      return launch_typed<T, 64>(a, stream);
    case 96:
      return launch_typed<T, 96>(a, stream);
    case 128:
      return launch_typed<T, 128>(a, stream);
    case 160:
      return launch_typed<T, 160>(a, stream);
    case 192:
      return launch_typed<T, 192>(a, stream);
    case 224:
      return launch_typed<T, 224>(a, stream);
    case 256:
      return launch_typed<T, 256>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

bool paged_decode_supports_head_dim(int head_dim) {
  return head_dim % 32 == 0 && head_dim >= 32 && head_dim <= kMaxHeadDim;
}

int64_t paged_decode_counter_count(int batch, int heads, int kv_heads) {
  return int64_t(batch) * kv_heads * head_runs_per_kv_head(heads, kv_heads);  // one per (sequence, head run)
}

int paged_decode_partition_size(int batch, int heads, int kv_heads) {
  const int64_t blocks_per_partition = paged_decode_counter_count(batch, heads, kv_heads);
  return blocks_per_partition <= 16 ? 64 : blocks_per_partition <= 128 ? 128 : kPagedDecodeMaxPartition;
}

int paged_decode_launch(const PagedDecodeArgs& a, void* stream) {
  if (!paged_decode_supports_head_dim(a.head_dim) || a.kv_heads <= 0 || a.heads % a.kv_heads != 0 ||
      a.partition_size % kTile != 0 || a.partition_size <= 0 || a.partition_size > kPagedDecodeMaxPartition)
    return cudaErrorInvalidValue;
  auto s = static_cast<cudaStream_t>(stream);
  return launch_by_dtype(a.dtype, [&](auto tag) { return launch_dim<typename decltype(tag)::type>(a, s); });
}

}  // namespace musacoder::engine
#else
}  // namespace
}  // namespace musacoder::engine
#endif  // MUSACODER_CUDA_EMULATION
