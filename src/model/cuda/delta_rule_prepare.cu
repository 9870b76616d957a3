// chunk_prepare (delta_rule_kernels.h, step 1): the UT transform of every (row, chunk) of C = 64 tokens, one
// block of 256 threads each, float32.
//
//   1. g and β of the chunk into shared memory; cum = the running sum of g, and e^{cum}, e^{cum_C − cum} once
//      per token (qd, w's right-hand side and kd scale by them).
//   2. q and k in slabs of up to 64 features, copied row by row (float4, coalesced) into shared memory,
//      token-major with 4 floats of padding; per slab, qd = q e^{cum} and kd = k e^{cum_C − cum} go out, and
//      the products q_i·k_j and k_i·k_j accumulate in registers: thread (ty, tx) of a 16 × 16 grid owns rows
//      ty + 16a and columns tx + 16b (a, b < 4), so its tiles with b > a lie wholly above the diagonal and
//      are never computed, and no warp diverges.
//   3. A (strictly lower, β_i k_i·k_j e^{cum_i − cum_j}) into shared memory; Aqk (q_i·k_j e^{cum_i − cum_j},
//      j ≤ i) through a padded shared tile to global memory, transposed, in float4 stores.
//   4. (I + A) X = R by forward substitution, one column of R per thread with X in registers: columns
//      0 .. dv−1 are u (R = β v), dv .. are w (R = β k e^{cum}, written transposed). R is read from global
//      memory up front; each row's sum is two partial sums over float4 rows of A.
//
// tests/unit/model/delta_prepare_emulated_test.cpp includes this file on the CPU with
// MUSACODER_CUDA_EMULATION defined (tests/support/cuda_emulation.h): the kernel runs as written, the launcher
// is left out.
#ifndef MUSACODER_CUDA_EMULATION
#include <cuda_runtime.h>

#include "core/cuda_dtype.cuh"
#endif

#include "model/cuda/delta_rule_kernels.h"

namespace musacoder::model::cuda {
namespace {

constexpr int C = kChunk;
constexpr int kPrepareThreads = 256;  // a 16 × 16 grid of 4 × 4 product tiles; one solve column each
constexpr int kSlab = 64;             // features of q and k staged at once
constexpr int kPairs = 10;            // the (a, b) tiles with b ≤ a

__host__ __device__ inline int slab_of(int dk) {
  return dk < kSlab ? dk : kSlab;
}

// Shared memory in floats: the q and k slabs (C rows of slab + 4 each), later Aqk's tile (C rows of C + 4);
// then A (C, C) and the four per-token arrays of Gates.
__host__ __device__ inline int staging_floats(int dk) {
  const int slabs = 2 * C * (slab_of(dk) + 4), tile = C * (C + 4);
  return slabs > tile ? slabs : tile;
}
__host__ __device__ inline int prepare_floats(int dk) {
  return staging_floats(dk) + C * C + 4 * C;
}

__device__ inline float fma4(float4 a, float4 b, float acc) {
  acc = fmaf(a.x, b.x, acc);
  acc = fmaf(a.y, b.y, acc);
  acc = fmaf(a.z, b.z, acc);
  return fmaf(a.w, b.w, acc);
}

struct Gates {         // per token of the chunk, in shared memory
  float *cum, *bs;     // the running sum of g; β
  float *grow, *rest;  // e^{cum}; e^{cum_C − cum}
};

__device__ Gates load_gates(const float* __restrict__ g, const float* __restrict__ beta, int64_t tok0,
                            float* smem) {
  const Gates t{smem, smem + C, smem + 2 * C, smem + 3 * C};
  if (threadIdx.x < C) {
    t.cum[threadIdx.x] = g[tok0 + threadIdx.x];
    t.bs[threadIdx.x] = beta[tok0 + threadIdx.x];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float acc = 0.f;
    for (int i = 0; i < C; ++i) t.cum[i] = (acc += t.cum[i]);
  }
  __syncthreads();
  if (threadIdx.x < C) {
    t.grow[threadIdx.x] = __expf(t.cum[threadIdx.x]);
    t.rest[threadIdx.x] = __expf(t.cum[C - 1] - t.cum[threadIdx.x]);
  }
  __syncthreads();
  return t;
}

// Features d0 .. d0 + slab of the chunk's q and k rows into qs, ks (row stride slab + 4).
__device__ void stage_slab(const float* __restrict__ q, const float* __restrict__ k, int64_t tok0, int dk,
                           int d0, int slab, float* qs, float* ks) {
  const int per_row = slab / 4, stride = slab + 4;
  for (int e = threadIdx.x; e < C * per_row; e += blockDim.x) {
    const int i = e / per_row, c = (e % per_row) * 4;
    const int64_t src = (tok0 + i) * dk + d0 + c;
    *reinterpret_cast<float4*>(qs + i * stride + c) = *reinterpret_cast<const float4*>(q + src);
    *reinterpret_cast<float4*>(ks + i * stride + c) = *reinterpret_cast<const float4*>(k + src);
  }
}

// qd (transposed, (dk, C)) and kd ((C, dk)) of the staged features; consecutive threads write consecutive
// addresses of each.
__device__ void write_scaled_slab(const float* qs, const float* ks, int dk, int d0, int slab, const Gates& gt,
                                  float* __restrict__ qdt, float* __restrict__ kd) {
  const int stride = slab + 4;
  for (int e = threadIdx.x; e < C * slab; e += blockDim.x) {
    const int i = e % C, d = e / C;
    qdt[(d0 + d) * C + i] = qs[i * stride + d] * gt.grow[i];
    const int t = e / slab, f = e % slab;
    kd[t * dk + d0 + f] = ks[t * stride + f] * gt.rest[t];
  }
}

struct Products {
  float qk[kPairs], kk[kPairs];  // tile (a, b), b ≤ a, at a(a+1)/2 + b
};

__device__ void accumulate_products(const float* qs, const float* ks, int slab, Products& p) {
  const int stride = slab + 4, ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  for (int d = 0; d < slab; d += 4) {
    float4 kb[4];
#pragma unroll
    for (int b = 0; b < 4; ++b) kb[b] = *reinterpret_cast<const float4*>(ks + (tx + 16 * b) * stride + d);
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      const float4 qa = *reinterpret_cast<const float4*>(qs + (ty + 16 * a) * stride + d);
      const float4 ka = *reinterpret_cast<const float4*>(ks + (ty + 16 * a) * stride + d);
#pragma unroll
      for (int b = 0; b <= a; ++b) {
        const int t = a * (a + 1) / 2 + b;
        p.qk[t] = fma4(qa, kb[b], p.qk[t]);
        p.kk[t] = fma4(ka, kb[b], p.kk[t]);
      }
    }
  }
}

// A into shared memory (row-major) and Aqk into `tile` transposed (row j of C + 4 floats), zeros included.
__device__ void store_products(const Products& p, const Gates& gt, float* A, float* tile) {
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int i = ty + 16 * a, j = tx + 16 * b;
      float aqk = 0.f, akk = 0.f;
      if (b <= a && j <= i) {
        const int t = a * (a + 1) / 2 + b;
        const float decay = __expf(gt.cum[i] - gt.cum[j]);
        aqk = p.qk[t] * decay;
        if (j < i) akk = gt.bs[i] * p.kk[t] * decay;
      }
      tile[j * (C + 4) + i] = aqk;
      A[i * C + j] = akk;
    }
}

__device__ void copy_tile(const float* tile, float* __restrict__ aqkt) {
  for (int e = threadIdx.x; e < C * C / 4; e += blockDim.x) {
    const int j = e / (C / 4), i = (e % (C / 4)) * 4;
    *reinterpret_cast<float4*>(aqkt + j * C + i) = *reinterpret_cast<const float4*>(tile + j * (C + 4) + i);
  }
}

__device__ void solve_column(const float* A, const Gates& gt, const float* __restrict__ v,
                             const float* __restrict__ k, int64_t tok0, int dk, int dv, float* __restrict__ u,
                             float* __restrict__ wt) {
  const int col = threadIdx.x;
  if (col >= dv + dk) return;
  const bool is_u = col < dv;
  const float* src = is_u ? v + tok0 * dv + col : k + tok0 * dk + (col - dv);
  const int step = is_u ? dv : dk;
  float x[C];
#pragma unroll
  for (int i = 0; i < C; ++i) x[i] = is_u ? gt.bs[i] * src[i * step] : gt.bs[i] * src[i * step] * gt.grow[i];
#pragma unroll
  for (int i = 1; i < C; ++i) {
    float part[2] = {0.f, 0.f};  // four partial sums spill x at 80 registers (3 blocks per multiprocessor)
#pragma unroll
    for (int j = 0; j < i; j += 4) {
      const float4 a = *reinterpret_cast<const float4*>(A + i * C + j);
      part[0] = fmaf(a.x, x[j], part[0]);
      if (j + 1 < i) part[1] = fmaf(a.y, x[j + 1], part[1]);
      if (j + 2 < i) part[0] = fmaf(a.z, x[j + 2], part[0]);
      if (j + 3 < i) part[1] = fmaf(a.w, x[j + 3], part[1]);
    }
    x[i] -= part[0] + part[1];
    asm volatile("" ::: "memory");  // keeps each row's loads of A in its row: hoisted, they spill x
  }
  if (is_u) {
#pragma unroll
    for (int i = 0; i < C; ++i) u[i * dv + col] = x[i];
  } else {
    float* dst = wt + (col - dv) * C;
#pragma unroll
    for (int i = 0; i < C; i += 4)
      *reinterpret_cast<float4*>(dst + i) = make_float4(x[i], x[i + 1], x[i + 2], x[i + 3]);
  }
}

__global__ void __launch_bounds__(kPrepareThreads, 3)
    chunk_prepare_kernel(DeltaShape s, const float* __restrict__ q, const float* __restrict__ k,
                         const float* __restrict__ v, const float* __restrict__ g,
                         const float* __restrict__ beta, ChunkScratch out) {
  MC_DYNAMIC_SHARED(raw);
  float* smem = reinterpret_cast<float*>(raw);
  const int dk = static_cast<int>(s.dk), dv = static_cast<int>(s.dv), slab = slab_of(dk);
  const int64_t N = s.T / C, row = blockIdx.x / N, n = blockIdx.x % N;
  const int64_t tok0 = row * s.T + n * C, chunk = row * N + n;
  float *qs = smem, *ks = smem + C * (slab + 4);
  float* A = smem + staging_floats(dk);
  const Gates gt = load_gates(g, beta, tok0, A + C * C);
  Products p{};
  for (int d0 = 0; d0 < dk; d0 += slab) {
    stage_slab(q, k, tok0, dk, d0, slab, qs, ks);
    __syncthreads();
    write_scaled_slab(qs, ks, dk, d0, slab, gt, out.qdt + chunk * dk * C, out.kd + chunk * C * dk);
    accumulate_products(qs, ks, slab, p);
    __syncthreads();
  }
  store_products(p, gt, A, smem);
  __syncthreads();
  copy_tile(smem, out.aqkt + chunk * C * C);
  solve_column(A, gt, v, k, tok0, dk, dv, out.u + chunk * C * dv, out.wt + chunk * dk * C);
  if (threadIdx.x == 0) out.decay[chunk] = gt.grow[C - 1];
}

}  // namespace

#ifndef MUSACODER_CUDA_EMULATION
int chunk_prepare(const DeltaShape& s, const float* q, const float* k, const float* v, const float* g,
                  const float* beta, ChunkScratch scratch, Stream stream) {
  if ((reinterpret_cast<uintptr_t>(q) | reinterpret_cast<uintptr_t>(k)) % 16 != 0)
    return static_cast<int>(cudaErrorMisalignedAddress);  // the slabs are float4 loads
  const int bytes = static_cast<int>(sizeof(float)) * prepare_floats(static_cast<int>(s.dk));
  cudaFuncSetAttribute(chunk_prepare_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  const unsigned blocks = static_cast<unsigned>(s.rows * (s.T / C));
  chunk_prepare_kernel<<<blocks, kPrepareThreads, bytes, stream>>>(s, q, k, v, g, beta, scratch);
  return static_cast<int>(cudaGetLastError());
}
#endif

}  // namespace musacoder::model::cuda
