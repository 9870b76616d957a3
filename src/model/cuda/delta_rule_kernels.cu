// The gated delta rule on CUDA: see delta_rule_kernels.h for the math and the layouts. float32 only.
#include <cuda_runtime.h>

#include "model/cuda/delta_rule_kernels.h"

namespace musacoder::model::cuda {
namespace {

constexpr int C = kChunk;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kScanTile = 32;  // dv columns per chunk_scan / chunk_output block: one per lane
constexpr int kRowsPerWarp = C / kWarps;  // chunk rows of the (C, kScanTile) products per warp
constexpr int kBackTile = 16;  // dv columns per backward block
constexpr int kSegment = 8;    // tokens whose states the backward keeps in shared memory at once
constexpr int kMaxDim = 128;   // dk, dv bound of these kernels

// Scratch layouts per chunk (see ChunkScratch): u (C, dv), becoming v' = u − w S in the scan; wt, qdt (dk, C)
// transposed so that a warp's eight chunk rows are two float4 loads; kd (C, dk); aqkt (C, C) transposed.

// ---------------------------------------------------------------------------------------------------
// chunk_scan: one block per (row, tile of kScanTile value columns), chunks in order. Lane c owns column c;
// warp w owns the state rows w·R .. w·R + R − 1 (R = dk / 8) in registers and the chunk rows w·8 .. w·8 + 7
// of v'. The next chunk's wt and kd are copied into shared memory (cp.async) while this one is computed.
// Writes the state entering every chunk to `checkpoints` and v' over u (both read by chunk_output).
__device__ void copy_async16(float* dst, const float* src) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
}
__device__ void async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int Pending>
__device__ void async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending)); }

// eight consecutive floats of a shared array (16-byte aligned), broadcast to the warp
__device__ void load8(const float* p, float* out) {
  const float4 a = *reinterpret_cast<const float4*>(p), b = *reinterpret_cast<const float4*>(p + 4);
  out[0] = a.x; out[1] = a.y; out[2] = a.z; out[3] = a.w;
  out[4] = b.x; out[5] = b.y; out[6] = b.z; out[7] = b.w;
}

// Sr[r] += row[r]·x for the R floats of a shared row (float4 loads; R = 2: one float2), broadcast to the warp
template <int R>
__device__ void add_scaled_row(float* Sr, const float* row, float x) {
  if constexpr (R % 4 == 0) {
#pragma unroll
    for (int r = 0; r < R; r += 4) {
      const float4 a = *reinterpret_cast<const float4*>(row + r);
      Sr[r] += a.x * x;
      Sr[r + 1] += a.y * x;
      Sr[r + 2] += a.z * x;
      Sr[r + 3] += a.w * x;
    }
  } else {
    static_assert(R == 2, "R is dk / 8 with dk in {16, 32, 64, 128}");
    const float2 a = *reinterpret_cast<const float2*>(row);
    Sr[0] += a.x * x;
    Sr[1] += a.y * x;
  }
}

template <int R>
__global__ void __launch_bounds__(kThreads) chunk_scan_kernel(DeltaShape s, ChunkScratch in,
                                                              const uint8_t* __restrict__ reset,
                                                              const float* __restrict__ initial,
                                                              float* __restrict__ final_state,
                                                              float* __restrict__ checkpoints) {
  constexpr int dk = R * kWarps;
  extern __shared__ __align__(16) float smem[];
  // smem: two stages (chunk parity), each wt (dk, C) then kd (C, dk); then S and v'
  auto stage = [&](int64_t n) { return smem + (n & 1) * 2 * dk * C; };
  float* S = smem + 4 * dk * C;                 // (dk, kScanTile)
  float* vnew = S + dk * kScanTile;             // (C, kScanTile)
  const int dv = static_cast<int>(s.dv);
  const int64_t N = s.T / C, row = blockIdx.x, batch = row / s.heads_per_row;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int c = blockIdx.y * kScanTile + lane;  // this thread's value column
  const int d0 = warp * R, i0 = warp * kRowsPerWarp;
  auto prefetch = [&](int64_t n) {
    const int64_t chunk = row * N + n;
    const float* wt = in.wt + chunk * C * dk;
    const float* kd = in.kd + chunk * C * dk;
    float* dst = stage(n);
    for (int e = threadIdx.x * 4; e < dk * C; e += kThreads * 4) {
      copy_async16(dst + e, wt + e);
      copy_async16(dst + dk * C + e, kd + e);
    }
    async_commit();
  };
  float Sr[R];
#pragma unroll
  for (int r = 0; r < R; ++r) Sr[r] = initial ? initial[(row * dk + d0 + r) * dv + c] : 0.f;
  prefetch(0);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t chunk = row * N + n;
    if (n + 1 < N) {
      prefetch(n + 1);
      async_wait<1>();
    } else {
      async_wait<0>();
    }
    const bool zero = reset && reset[batch * N + n];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (zero) Sr[r] = 0.f;
      checkpoints[(chunk * dk + d0 + r) * dv + c] = Sr[r];
      S[(d0 + r) * kScanTile + lane] = Sr[r];
    }
    __syncthreads();  // the stage has landed for every thread; S is whole
    const float* wt = stage(n);
    const float* kd = wt + dk * C;
    float* u = in.u + chunk * C * dv;
    float acc[kRowsPerWarp];
#pragma unroll
    for (int a = 0; a < kRowsPerWarp; ++a) acc[a] = u[(i0 + a) * dv + c];
    for (int d = 0; d < dk; ++d) {  // v' = u − w S
      float w8[kRowsPerWarp];
      load8(wt + d * C + i0, w8);
      const float sd = S[d * kScanTile + lane];
#pragma unroll
      for (int a = 0; a < kRowsPerWarp; ++a) acc[a] -= w8[a] * sd;
    }
#pragma unroll
    for (int a = 0; a < kRowsPerWarp; ++a) {
      vnew[(i0 + a) * kScanTile + lane] = acc[a];
      u[(i0 + a) * dv + c] = acc[a];
    }
    __syncthreads();
    const float decay = in.decay[chunk];
#pragma unroll
    for (int r = 0; r < R; ++r) Sr[r] *= decay;
    for (int i = 0; i < C; ++i) {  // S ← decay·S + kdᵀ v'
      const float vi = vnew[i * kScanTile + lane];
      add_scaled_row<R>(Sr, kd + i * dk + d0, vi);
    }
    __syncthreads();  // every thread is done with this stage before the next prefetch overwrites it
  }
  if (final_state) {
#pragma unroll
    for (int r = 0; r < R; ++r) final_state[(row * dk + d0 + r) * dv + c] = Sr[r];
  }
}

// ---------------------------------------------------------------------------------------------------
// chunk_output: every chunk at once, one block per (row, chunk, tile of kScanTile value columns):
// o = qd S + Aqk v' with S the state entering the chunk (checkpoints) and v' from the scan.
__global__ void __launch_bounds__(kThreads) chunk_output_kernel(DeltaShape s, ChunkScratch in,
                                                                const float* __restrict__ checkpoints,
                                                                float* __restrict__ o) {
  extern __shared__ __align__(16) float smem[];
  const int dk = static_cast<int>(s.dk), dv = static_cast<int>(s.dv);
  const int64_t N = s.T / C;
  const int64_t chunk = blockIdx.x, row = chunk / N, n = chunk % N;
  const int c0 = blockIdx.y * kScanTile;
  float* qdt = smem;                  // (dk, C)
  float* aqkt = qdt + dk * C;         // (C, C)
  float* S = aqkt + C * C;            // (dk, kScanTile)
  float* vnew = S + dk * kScanTile;   // (C, kScanTile)
  for (int e = threadIdx.x * 4; e < dk * C; e += kThreads * 4)
    *reinterpret_cast<float4*>(qdt + e) = *reinterpret_cast<const float4*>(in.qdt + chunk * C * dk + e);
  for (int e = threadIdx.x * 4; e < C * C; e += kThreads * 4)
    *reinterpret_cast<float4*>(aqkt + e) = *reinterpret_cast<const float4*>(in.aqkt + chunk * C * C + e);
  for (int e = threadIdx.x; e < dk * kScanTile; e += kThreads) {
    const int d = e / kScanTile, c = e % kScanTile;
    S[e] = checkpoints[(chunk * dk + d) * dv + c0 + c];
  }
  for (int e = threadIdx.x; e < C * kScanTile; e += kThreads) {
    const int i = e / kScanTile, c = e % kScanTile;
    vnew[e] = in.u[(chunk * C + i) * dv + c0 + c];
  }
  __syncthreads();
  const int lane = threadIdx.x % 32, i0 = (threadIdx.x / 32) * kRowsPerWarp;
  float acc[kRowsPerWarp] = {};
  float x8[kRowsPerWarp];
  for (int d = 0; d < dk; ++d) {
    load8(qdt + d * C + i0, x8);
    const float sd = S[d * kScanTile + lane];
#pragma unroll
    for (int a = 0; a < kRowsPerWarp; ++a) acc[a] += x8[a] * sd;
  }
  for (int j = 0; j < i0 + kRowsPerWarp; ++j) {  // aqkt is zero above the diagonal
    load8(aqkt + j * C + i0, x8);
    const float vj = vnew[j * kScanTile + lane];
#pragma unroll
    for (int a = 0; a < kRowsPerWarp; ++a) acc[a] += x8[a] * vj;
  }
#pragma unroll
  for (int a = 0; a < kRowsPerWarp; ++a) o[(row * s.T + n * C + i0 + a) * dv + c0 + lane] = acc[a];
}

// ---------------------------------------------------------------------------------------------------
// recurrent_step: one block per row, one thread per value column.
__global__ void recurrent_step_kernel(DeltaShape s, const float* __restrict__ q, const float* __restrict__ k,
                                      const float* __restrict__ v, const float* __restrict__ g,
                                      const float* __restrict__ beta, float* __restrict__ state,
                                      float* __restrict__ o) {
  __shared__ float qs[kMaxDim], ks[kMaxDim];
  const int dk = static_cast<int>(s.dk), dv = static_cast<int>(s.dv);
  const int64_t row = blockIdx.x;
  for (int d = threadIdx.x; d < dk; d += blockDim.x) {
    qs[d] = q[row * dk + d];
    ks[d] = k[row * dk + d];
  }
  __syncthreads();
  const float a = __expf(g[row]), b = beta[row];
  float* S = state + row * dk * dv;
  for (int c = threadIdx.x; c < dv; c += blockDim.x) {
    float kv = 0.f;
    for (int d = 0; d < dk; ++d) kv += a * S[d * dv + c] * ks[d];
    const float delta = (v[row * dv + c] - kv) * b;
    float out = 0.f;
    for (int d = 0; d < dk; ++d) {
      const float x = a * S[d * dv + c] + ks[d] * delta;
      S[d * dv + c] = x;
      out += x * qs[d];
    }
    o[row * dv + c] = out;
  }
}

// ---------------------------------------------------------------------------------------------------
// recurrent_backward: one block per (row, tile of kBackTile value columns); thread (rg, c) owns rows
// rg·R .. rg·R + R − 1 of column c (R = dk / 16).
struct BackThread {
  int c, rg;
};

// Σ over the 16 columns of a row group (lanes of one half-warp).
__device__ float sum_columns(float x) {
  for (int off = kBackTile / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off, kBackTile);
  return x;
}

// Σ over the 16 row groups of a column: partials through shared memory.
__device__ float sum_rows(float x, float* red, const BackThread& t) {
  red[t.rg * kBackTile + t.c] = x;
  __syncthreads();
  float total = 0.f;
  for (int r = 0; r < kThreads / kBackTile; ++r) total += red[r * kBackTile + t.c];
  __syncthreads();
  return total;
}

// Σ over the block.
__device__ float sum_block(float x, float* red) {
  for (int off = 16; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = x;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < kThreads / 32; ++w) total += red[w];
  __syncthreads();
  return total;
}

// S (registers, this thread's R rows) -> the state after token t.
template <int R>
__device__ void forward_token(float* S, const BackThread& t, const float* kt, float a, float b, float vc,
                              float* red) {
  float part = 0.f;
#pragma unroll
  for (int r = 0; r < R; ++r) part += S[r] * kt[t.rg * R + r];
  const float kv = a * sum_rows(part, red, t);
  const float delta = (vc - kv) * b;
#pragma unroll
  for (int r = 0; r < R; ++r) S[r] = a * S[r] + kt[t.rg * R + r] * delta;
}

template <int R>
__global__ void __launch_bounds__(kThreads) recurrent_backward_kernel(
    DeltaShape s, const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
    const float* __restrict__ g, const float* __restrict__ beta, const uint8_t* __restrict__ reset,
    const float* __restrict__ checkpoints, const float* __restrict__ d_o, const float* __restrict__ d_final,
    float* __restrict__ dq, float* __restrict__ dk_out, float* __restrict__ dv_out, float* __restrict__ dg,
    float* __restrict__ dbeta, float* __restrict__ d_initial) {
  extern __shared__ float smem[];
  const int dk = static_cast<int>(s.dk), dv = static_cast<int>(s.dv);
  const BackThread t{static_cast<int>(threadIdx.x % kBackTile), static_cast<int>(threadIdx.x / kBackTile)};
  const int64_t N = s.T / C, row = blockIdx.x, batch = row / s.heads_per_row;
  const int c = blockIdx.y * kBackTile + t.c;  // this thread's value column
  const int slice = dk * kBackTile;            // one state tile
  float* seg_start = smem;                     // (C / kSegment) states entering each segment
  float* tok_state = seg_start + (C / kSegment) * slice;  // kSegment states entering each token
  float* red = tok_state + kSegment * slice;              // reduction scratch (kThreads floats)
  auto idx = [&](int r) { return (t.rg * R + r) * kBackTile + t.c; };
  float S[R], dS[R];
#pragma unroll
  for (int r = 0; r < R; ++r) dS[r] = d_final ? d_final[(row * dk + t.rg * R + r) * dv + c] : 0.f;
  for (int64_t n = N - 1; n >= 0; --n) {
    const int64_t chunk = row * N + n;
    // States entering each segment of the chunk, from the chunk's checkpoint.
  #pragma unroll
  for (int r = 0; r < R; ++r) S[r] = checkpoints[(chunk * dk + t.rg * R + r) * dv + c];
    for (int i = 0; i < C; ++i) {
      if (i % kSegment == 0)
      #pragma unroll
  for (int r = 0; r < R; ++r) seg_start[(i / kSegment) * slice + idx(r)] = S[r];
      const int64_t tok = row * s.T + n * C + i;
      forward_token<R>(S, t, k + tok * dk, __expf(g[tok]), beta[tok], v[tok * dv + c], red);
    }
    for (int seg = C / kSegment - 1; seg >= 0; --seg) {
    #pragma unroll
  for (int r = 0; r < R; ++r) S[r] = seg_start[seg * slice + idx(r)];
      for (int j = 0; j < kSegment; ++j) {  // the states entering the segment's tokens
      #pragma unroll
  for (int r = 0; r < R; ++r) tok_state[j * slice + idx(r)] = S[r];
        const int64_t tok = row * s.T + n * C + seg * kSegment + j;
        forward_token<R>(S, t, k + tok * dk, __expf(g[tok]), beta[tok], v[tok * dv + c], red);
      }
      for (int j = kSegment - 1; j >= 0; --j) {
        const int64_t tok = row * s.T + n * C + seg * kSegment + j;
        const float* kt = k + tok * dk;
        const float* qt = q + tok * dk;
        const float a = __expf(g[tok]), b = beta[tok], doc = d_o[tok * dv + c];
        float Sp[R];
        float part = 0.f;
      #pragma unroll
  for (int r = 0; r < R; ++r) {
          Sp[r] = tok_state[j * slice + idx(r)];
          part += Sp[r] * kt[t.rg * R + r];
        }
        const float Sk = sum_rows(part, red, t);  // (S_{t-1}ᵀ k)[c]
        const float u = v[tok * dv + c] - a * Sk;
        // dS += q doᵀ; dq = S_t do (S_t = a S_{t-1} + k (β u)ᵀ).
        float dsk_part = 0.f;
      #pragma unroll
  for (int r = 0; r < R; ++r) {
          const int d = t.rg * R + r;
          dS[r] += qt[d] * doc;
          const float St = a * Sp[r] + kt[d] * b * u;
          const float dq_d = sum_columns(St * doc);
          if (t.c == 0) atomicAdd(&dq[tok * dk + d], dq_d);
          dsk_part += dS[r] * kt[d];
        }
        const float dSk = sum_rows(dsk_part, red, t);  // (dSᵀ k)[c]
        dv_out[tok * dv + c] = b * dSk;
        float dss = 0.f;
      #pragma unroll
  for (int r = 0; r < R; ++r) {
          const int d = t.rg * R + r;
          const float dk_d = sum_columns(b * dS[r] * u - a * b * Sp[r] * dSk);
          if (t.c == 0) atomicAdd(&dk_out[tok * dk + d], dk_d);
          dss += dS[r] * Sp[r];
        }
        // dβ = Σ_c dSk u; dg = a (<dS, S_{t-1}> − β Σ_c dSk Sk).
        const float db = sum_block(t.rg == 0 ? dSk * u : 0.f, red);
        const float da = sum_block(dss - (t.rg == 0 ? b * dSk * Sk : 0.f), red);
        if (threadIdx.x == 0) {
          atomicAdd(&dbeta[tok], db);
          atomicAdd(&dg[tok], da * a);
        }
      #pragma unroll
  for (int r = 0; r < R; ++r) dS[r] = a * (dS[r] - b * kt[t.rg * R + r] * dSk);
      }
    }
    if (reset && reset[batch * N + n])  // the state entering this chunk was the constant 0
    #pragma unroll
  for (int r = 0; r < R; ++r) dS[r] = 0.f;
  }
  if (d_initial)
  #pragma unroll
  for (int r = 0; r < R; ++r) d_initial[(row * dk + t.rg * R + r) * dv + c] = dS[r];
}

}  // namespace

int chunk_scan(const DeltaShape& s, ChunkScratch scratch, const uint8_t* reset, const float* initial_state,
               float* o, float* final_state, float* checkpoints, Stream stream) {
  const dim3 grid(static_cast<unsigned>(s.rows), static_cast<unsigned>(s.dv / kScanTile));
  const size_t scan_bytes = sizeof(float) * (4 * s.dk * C + s.dk * kScanTile + C * kScanTile);
  auto launch = [&](auto kernel) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(scan_bytes));
    kernel<<<grid, kThreads, scan_bytes, stream>>>(s, scratch, reset, initial_state, final_state, checkpoints);
  };
  switch (s.dk / kWarps) {  // state rows per warp
    case 2: launch(chunk_scan_kernel<2>); break;
    case 4: launch(chunk_scan_kernel<4>); break;
    case 8: launch(chunk_scan_kernel<8>); break;
    case 16: launch(chunk_scan_kernel<16>); break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return static_cast<int>(err);
  const size_t out_bytes = sizeof(float) * (s.dk * C + C * C + s.dk * kScanTile + C * kScanTile);
  cudaFuncSetAttribute(chunk_output_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(out_bytes));
  const dim3 out_grid(static_cast<unsigned>(s.rows * (s.T / C)), static_cast<unsigned>(s.dv / kScanTile));
  chunk_output_kernel<<<out_grid, kThreads, out_bytes, stream>>>(s, scratch, checkpoints, o);
  return static_cast<int>(cudaGetLastError());
}

int recurrent_backward(const DeltaShape& s, const float* q, const float* k, const float* v, const float* g,
                       const float* beta, const uint8_t* reset, const float* checkpoints, const float* d_o,
                       const float* d_final, float* dq, float* dk, float* dv, float* dg, float* dbeta,
                       float* d_initial, Stream stream) {
  const size_t slice = static_cast<size_t>(s.dk) * kBackTile;
  const size_t bytes = sizeof(float) * ((C / kSegment + kSegment) * slice + kThreads);
  const dim3 grid(static_cast<unsigned>(s.rows), static_cast<unsigned>(s.dv / kBackTile));
  auto launch = [&](auto kernel) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    kernel<<<grid, kThreads, bytes, stream>>>(s, q, k, v, g, beta, reset, checkpoints, d_o, d_final, dq, dk, dv,
                                              dg, dbeta, d_initial);
  };
  switch (s.dk / (kThreads / kBackTile)) {  // rows of the state per thread
    case 1: launch(recurrent_backward_kernel<1>); break;
    case 2: launch(recurrent_backward_kernel<2>); break;
    case 4: launch(recurrent_backward_kernel<4>); break;
    case 8: launch(recurrent_backward_kernel<8>); break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
  return static_cast<int>(cudaGetLastError());
}

int recurrent_step(const DeltaShape& s, const float* q, const float* k, const float* v, const float* g,
                   const float* beta, float* state, float* o, Stream stream) {
  recurrent_step_kernel<<<static_cast<unsigned>(s.rows), 128, 0, stream>>>(s, q, k, v, g, beta, state, o);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace musacoder::model::cuda
