// CUDA kernels of the gated delta rule (model/delta_rule.h), float32 throughout. Plain C++ interface
// (no libtorch in the .cu, so it compiles fast and alone); model/delta_rule_cuda.cpp wraps it for torch,
// with autograd. Every pointer is device memory, contiguous, in the layouts below; the caller has done
// the L2 normalisation of q and k, the dk^-1/2 scaling of q and the repeat of q/k heads to Hv heads.
//
// Layouts (BH = B·Hv rows, each an independent recurrence):
//   q, k: (BH, T, dk)  v, o: (BH, T, dv)  g (log decay), beta: (BH, T)  state: (BH, dk, dv)
//   reset: (B, N) uint8 or null — zero the state before chunk n of batch row b (packed sequences);
//   heads_per_row = Hv, so row r belongs to batch row r / Hv.
//
// Chunked forward (training / prefill), chunk C = 64, T padded by the caller to a multiple of C:
//   1. chunk_prepare (delta_rule_prepare.cu): per (row, chunk), the UT transform of transformers'
//      torch_chunk_gated_delta_rule:
//      u = (I + A)^-1 (β v), w = (I + A)^-1 (β k e^{cum}), A_ij = β_i k_i·k_j e^{cum_i − cum_j} (j < i),
//      Aqk_ij = q_i·k_j e^{cum_i − cum_j} (j ≤ i), qd = q e^{cum}, kd = k e^{cum_C − cum}, decay = e^{cum_C}.
//   2. chunk_scan, in two kernels: (a) per (row, dv tile), the state slice through the chunks, the only
//      sequential part: v' = u − w S (written over u); S ← decay·S + kdᵀ v'; the state entering every chunk
//      goes to `checkpoints` ((BH, N, dk, dv), also the backward's); the chunk's w and kd are staged in
//      shared memory while the previous chunk is computed. (b) per (row, chunk, dv tile), all at once:
//      o = qd S + Aqk v'.
// Backward (recurrent form over the checkpoints): per (row, dv tile), chunks in reverse; inside a chunk
//   the token states are recomputed from the chunk's checkpoint, then the token recurrence is
//   differentiated in reverse (dq, dk, dbeta, dg are sums over dv tiles: atomically added, so zero them).
// Decode step: per row, S ← e^g S; S ← S + k (β (v − Sᵀk))ᵀ; o = Sᵀ q — one token, state in place.
//
// Requirements (checked by the wrapper): dk, dv ≤ 256 and multiples of 16; C = 64. Every launch returns
// the cudaError_t of the launch (0 on success).
#pragma once

#include <cstdint>

struct CUstream_st;

namespace musacoder::model::cuda {

using Stream = CUstream_st*;

constexpr int kChunk = 64;

struct ChunkScratch {  // per (row, chunk): caller-allocated device buffers, float32
  float* u;      // (BH, N, C, dv); v' after chunk_scan
  float* wt;     // (BH, N, dk, C): w transposed
  float* aqkt;   // (BH, N, C, C): Aqk transposed (aqkt[j][i] = Aqk_ij)
  float* qdt;    // (BH, N, dk, C): qd transposed
  float* kd;     // (BH, N, C, dk)
  float* decay;  // (BH, N)
};

struct DeltaShape {
  int64_t rows = 0;           // B·Hv
  int64_t heads_per_row = 1;  // Hv (for reset lookup)
  int64_t T = 0;              // multiple of kChunk for the chunked path
  int64_t dk = 0, dv = 0;
};

int chunk_prepare(const DeltaShape& s, const float* q, const float* k, const float* v, const float* g,
                  const float* beta, ChunkScratch scratch, Stream stream);

// initial_state may be null (zeros); final_state may be null; checkpoints must not be null (the output
// pass reads them).
int chunk_scan(const DeltaShape& s, ChunkScratch scratch, const uint8_t* reset, const float* initial_state,
               float* o, float* final_state, float* checkpoints, Stream stream);

// Gradients of o (and of final_state, d_final may be null) with respect to q, k, v, g, beta and the
// initial state (d_initial may be null). checkpoints from chunk_scan. dq, dk, dg, dbeta must be zeroed.
int recurrent_backward(const DeltaShape& s, const float* q, const float* k, const float* v, const float* g,
                       const float* beta, const uint8_t* reset, const float* checkpoints, const float* d_o,
                       const float* d_final, float* dq, float* dk, float* dv, float* dg, float* dbeta,
                       float* d_initial, Stream stream);

// The inputs in the model's layout turned into the kernels' (delta_rule_layout.cu), for a forward without
// gradients: one pass instead of the repeat, transpose, cast, L2 norm and scaling ops of
// model/delta_rule.cpp. q, k (B, T, Hk, dk) and v (B, T, Hv, dv) of `dtype` (0 float, 1 half, 2 bfloat16), g
// and beta (B, T, Hv) float32, each with its own strides (the last dimension contiguous). Writes, float32,
// for row r = b·Hv + h and token t < T_padded (zeros for t ≥ T): q_out[r][t] = l2norm(q[b][t][h / (Hv / Hk)])
// · q_scale, k_out[r][t] = l2norm(k[b][t][h / (Hv / Hk)]), v_out[r][t] = v[b][t][h], g_out[r][t],
// beta_out[r][t]; with l2norm(x) = x · rsqrt(Σ x² + eps) in float32, the order of torch's ops (the sum's
// order aside).
struct LayoutSource {
  const void* data = nullptr;
  int64_t sb = 0, st = 0, sh = 0;  // element strides of b, t and the head
};
struct LayoutArgs {
  int dtype = 0;  // of q, k, v
  int64_t B = 0, T = 0, T_padded = 0, Hk = 0, Hv = 0, dk = 0, dv = 0;
  LayoutSource q, k, v, g, beta;
  float q_scale = 1.f, eps = 1e-6f;
  float *q_out = nullptr, *k_out = nullptr, *v_out = nullptr, *g_out = nullptr, *beta_out = nullptr;
};
int layout_inputs(const LayoutArgs& a, Stream stream);

// One decode token per row: q, k (BH, dk), v, o (BH, dv), g, beta (BH); state (BH, dk, dv) in place.
int recurrent_step(const DeltaShape& s, const float* q, const float* k, const float* v, const float* g,
                   const float* beta, float* state, float* o, Stream stream);

}  // namespace musacoder::model::cuda
