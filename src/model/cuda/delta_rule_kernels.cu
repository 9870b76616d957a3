// The gated delta rule on CUDA: see delta_rule_kernels.h for the math and the layouts. float32 only.
#include <cuda_runtime.h>

#include "model/cuda/delta_rule_kernels.h"

namespace musacoder::model::cuda {
namespace {

constexpr int C = kChunk;
constexpr int kThreads = 256;
constexpr int kScanTile = 32;  // dv columns per chunk_scan block
constexpr int kBackTile = 16;  // dv columns per backward block
constexpr int kSegment = 8;    // tokens whose states the backward keeps in shared memory at once
constexpr int kMaxDim = 128;   // dk, dv bound of these kernels

// ---------------------------------------------------------------------------------------------------
// chunk_prepare: one block per (row, chunk).
__global__ void chunk_prepare_kernel(DeltaShape s, const float* __restrict__ q, const float* __restrict__ k,
                                     const float* __restrict__ v, const float* __restrict__ g,
                                     const float* __restrict__ beta, ChunkScratch out) {
  extern __shared__ float smem[];
  const int dk = static_cast<int>(s.dk), dv = static_cast<int>(s.dv);
  const int64_t N = s.T / C;
  const int64_t row = blockIdx.x / N, n = blockIdx.x % N;
  const int64_t tok0 = row * s.T + n * C;  // first token of the chunk in (BH, T)
  float* qs = smem;            // (C, dk)
  float* ks = qs + C * dk;     // (C, dk)
  float* A = ks + C * dk;      // (C, C): strictly lower β_i k_i·k_j e^{cum_i − cum_j}
  float* cum = A + C * C;      // (C)
  float* bs = cum + C;         // (C)
  for (int i = threadIdx.x; i < C * dk; i += blockDim.x) {
    qs[i] = q[tok0 * dk + i];
    ks[i] = k[tok0 * dk + i];
  }
  if (threadIdx.x < C) bs[threadIdx.x] = beta[tok0 + threadIdx.x];
  if (threadIdx.x == 0) {
    float acc = 0.f;
    for (int i = 0; i < C; ++i) cum[i] = (acc += g[tok0 + i]);
  }
  __syncthreads();
  const int64_t chunk = row * N + n;
  float* aqk = out.aqk + chunk * C * C;
  for (int e = threadIdx.x; e < C * C; e += blockDim.x) {
    const int i = e / C, j = e % C;
    float qk = 0.f, kk = 0.f;
    if (j <= i) {
      for (int d = 0; d < dk; ++d) {
        qk += qs[i * dk + d] * ks[j * dk + d];
        kk += ks[i * dk + d] * ks[j * dk + d];
      }
    }
    const float decay = j <= i ? __expf(cum[i] - cum[j]) : 0.f;
    aqk[e] = qk * decay;
    A[e] = j < i ? bs[i] * kk * decay : 0.f;
  }
  __syncthreads();
  // Forward substitution (I + A) X = rhs, one column per thread: X_i = rhs_i − Σ_{j<i} A_ij X_j.
  for (int col = threadIdx.x; col < dv + dk; col += blockDim.x) {
    const bool is_u = col < dv;
    const int c = is_u ? col : col - dv;
    float x[C];
#pragma unroll
    for (int i = 0; i < C; ++i) {
      float r = is_u ? bs[i] * v[(tok0 + i) * dv + c] : bs[i] * ks[i * dk + c] * __expf(cum[i]);
#pragma unroll
      for (int j = 0; j < i; ++j) r -= A[i * C + j] * x[j];
      x[i] = r;
    }
    float* dst = is_u ? out.u + chunk * C * dv + c : out.w + chunk * C * dk + c;
    const int stride = is_u ? dv : dk;
#pragma unroll
    for (int i = 0; i < C; ++i) dst[i * stride] = x[i];
  }
  const float last = cum[C - 1];
  for (int e = threadIdx.x; e < C * dk; e += blockDim.x) {
    const int i = e / dk;
    out.qd[chunk * C * dk + e] = qs[e] * __expf(cum[i]);
    out.kd[chunk * C * dk + e] = ks[e] * __expf(last - cum[i]);
  }
  if (threadIdx.x == 0) out.decay[chunk] = __expf(last);
}

// ---------------------------------------------------------------------------------------------------
// chunk_scan: one block per (row, tile of kScanTile value columns), chunks in order.
__global__ void chunk_scan_kernel(DeltaShape s, ChunkScratch in, const uint8_t* __restrict__ reset,
                                  const float* __restrict__ initial, float* __restrict__ o,
                                  float* __restrict__ final_state, float* __restrict__ checkpoints) {
  __shared__ float S[kMaxDim * kScanTile];
  __shared__ float vnew[C * kScanTile];
  const int dk = static_cast<int>(s.dk), dv = static_cast<int>(s.dv);
  const int64_t N = s.T / C, row = blockIdx.x;
  const int c0 = blockIdx.y * kScanTile;
  const int64_t batch = row / s.heads_per_row;
  for (int e = threadIdx.x; e < dk * kScanTile; e += blockDim.x) {
    const int d = e / kScanTile, c = e % kScanTile;
    S[e] = initial ? initial[(row * dk + d) * dv + c0 + c] : 0.f;
  }
  __syncthreads();
  for (int64_t n = 0; n < N; ++n) {
    const int64_t chunk = row * N + n;
    if (reset && reset[batch * N + n]) {
      for (int e = threadIdx.x; e < dk * kScanTile; e += blockDim.x) S[e] = 0.f;
      __syncthreads();
    }
    if (checkpoints) {
      for (int e = threadIdx.x; e < dk * kScanTile; e += blockDim.x) {
        const int d = e / kScanTile, c = e % kScanTile;
        checkpoints[(chunk * dk + d) * dv + c0 + c] = S[e];
      }
    }
    const float* w = in.w + chunk * C * dk;
    const float* u = in.u + chunk * C * dv;
    for (int e = threadIdx.x; e < C * kScanTile; e += blockDim.x) {
      const int i = e / kScanTile, c = e % kScanTile;
      float acc = u[i * dv + c0 + c];
      for (int d = 0; d < dk; ++d) acc -= w[i * dk + d] * S[d * kScanTile + c];
      vnew[e] = acc;
    }
    __syncthreads();
    const float* qd = in.qd + chunk * C * dk;
    const float* aqk = in.aqk + chunk * C * C;
    for (int e = threadIdx.x; e < C * kScanTile; e += blockDim.x) {
      const int i = e / kScanTile, c = e % kScanTile;
      float acc = 0.f;
      for (int d = 0; d < dk; ++d) acc += qd[i * dk + d] * S[d * kScanTile + c];
      for (int j = 0; j <= i; ++j) acc += aqk[i * C + j] * vnew[j * kScanTile + c];
      o[(row * s.T + n * C + i) * dv + c0 + c] = acc;
    }
    __syncthreads();
    const float* kd = in.kd + chunk * C * dk;
    const float decay = in.decay[chunk];
    for (int e = threadIdx.x; e < dk * kScanTile; e += blockDim.x) {
      const int d = e / kScanTile, c = e % kScanTile;
      float acc = decay * S[e];
      for (int i = 0; i < C; ++i) acc += kd[i * dk + d] * vnew[i * kScanTile + c];
      S[e] = acc;
    }
    __syncthreads();
  }
  if (final_state) {
    for (int e = threadIdx.x; e < dk * kScanTile; e += blockDim.x) {
      const int d = e / kScanTile, c = e % kScanTile;
      final_state[(row * dk + d) * dv + c0 + c] = S[e];
    }
  }
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

int chunk_prepare(const DeltaShape& s, const float* q, const float* k, const float* v, const float* g,
                  const float* beta, ChunkScratch scratch, Stream stream) {
  const size_t bytes = sizeof(float) * (2 * C * s.dk + C * C + 2 * C);
  cudaFuncSetAttribute(chunk_prepare_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  const unsigned blocks = static_cast<unsigned>(s.rows * (s.T / C));
  chunk_prepare_kernel<<<blocks, kThreads, bytes, stream>>>(s, q, k, v, g, beta, scratch);
  return static_cast<int>(cudaGetLastError());
}

int chunk_scan(const DeltaShape& s, ChunkScratch scratch, const uint8_t* reset, const float* initial_state,
               float* o, float* final_state, float* checkpoints, Stream stream) {
  const dim3 grid(static_cast<unsigned>(s.rows), static_cast<unsigned>(s.dv / kScanTile));
  chunk_scan_kernel<<<grid, kThreads, 0, stream>>>(s, scratch, reset, initial_state, o, final_state, checkpoints);
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
