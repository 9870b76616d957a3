// The decode-batch projections with their prologue; see decode_linear_cuda.h for what each computes.
//
// tests/unit/engine/decode_linear_emulated_test.cpp includes this file on the CPU with
// MUSACODER_CUDA_EMULATION defined (tests/support/cuda_emulation.h): the kernels run as written, the launcher
// is left out.
#ifndef MUSACODER_CUDA_EMULATION
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <string_view>

#include "core/cuda_dtype.cuh"
#endif

#include "engine/decode_linear_cuda.h"

namespace musacoder::engine {
namespace {

constexpr int kLinearThreads = 256;
constexpr int kLinearWarps = kLinearThreads / 32;

// Each thread's partial sums of squares of the R rows, summed over the block; every thread gets the R sums.
template <int R>
__device__ __forceinline__ void block_sums(float (&sq)[R], float (*partial)[kLinearWarps]) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float s = warp_sum(sq[r]);
    if (threadIdx.x % 32 == 0) partial[r][threadIdx.x / 32] = s;
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < R; ++r) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < kLinearWarps; ++w) s += partial[r][w];
    sq[r] = s;
  }
}

// xs ← RMSNorm(round(h + delta)) of the R rows, rounded as add_rms_norm_kernel rounds them; block 0 also
// writes round(h + delta) to h_out. xs first holds round(h + delta) (exact in T) until the sums are known.
template <typename T, int R>
__device__ void norm_prologue(const DecodeLinearArgs& a, T* xs, float (*partial)[kLinearWarps]) {
  const T* h = static_cast<const T*>(a.h);
  const T* delta = static_cast<const T*>(a.delta);
  const T* w = static_cast<const T*>(a.norm_weight);
  T* h_out = delta && blockIdx.x == 0 ? static_cast<T*>(a.h_out) : nullptr;
  float sq[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    sq[r] = 0.f;
    for (int64_t c = threadIdx.x; c < a.k; c += blockDim.x) {
      const int64_t i = r * a.k + c;
      float v = to_float(h[i]);
      if (delta) v = round_to<T>(v + to_float(delta[i]));
      if (h_out) h_out[i] = from_float<T>(v);
      xs[i] = from_float<T>(v);
      sq[r] += v * v;
    }
  }
  block_sums<R>(sq, partial);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float rstd = rsqrtf(sq[r] / static_cast<float>(a.k) + a.eps);
    for (int64_t c = threadIdx.x; c < a.k; c += blockDim.x) {
      const int64_t i = r * a.k + c;  // written by this thread above: no barrier needed in between
      xs[i] = from_float<T>(to_float(w[c]) * round_to<T>(to_float(xs[i]) * rstd));
    }
  }
}

// xs ← the R rows of x (a.gate, in_stride elements apart) as they are.
template <typename T, int R>
__device__ void copy_prologue(const DecodeLinearArgs& a, T* xs) {
  const T* x = static_cast<const T*>(a.gate);
#pragma unroll
  for (int r = 0; r < R; ++r)
    for (int64_t c = threadIdx.x; c < a.k; c += blockDim.x) xs[r * a.k + c] = x[r * a.in_stride + c];
}

// Programmatic dependent launch (sm_90): the kernel is launched so that it may start before the kernel ahead
// of it in the stream has finished (cudaLaunchAttributeProgrammaticStreamSerialization); wait() returns once
// that kernel has completed and its writes are visible, so nothing it wrote may be read, and nothing written,
// before. launch_dependents() lets the next such kernel start once every block of this one has called it.
// Elsewhere (older GPUs, the CPU emulation) both are nothing and launches are ordinary.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// xs ← round(round(silu(gate)) · up) of the R rows, as silu_mul_kernel rounds it.
template <typename T, int R>
__device__ void silu_mul_prologue(const DecodeLinearArgs& a, T* xs) {
  const T* gate = static_cast<const T*>(a.gate);
  const T* up = static_cast<const T*>(a.up);
#pragma unroll
  for (int r = 0; r < R; ++r)
    for (int64_t c = threadIdx.x; c < a.k; c += blockDim.x) {
      const float g = to_float(gate[r * a.in_stride + c]);
      const float s = round_to<T>(g / (1.0f + expf(-g)));
      xs[r * a.k + c] = from_float<T>(s * to_float(up[r * a.in_stride + c]));
    }
}

// The 16 bytes at p as floats: 8 elements of a 16-bit type, 4 of float.
template <typename T>
__device__ __forceinline__ void unpack16(const uint4& v, float (&out)[16 / sizeof(T)]) {
  const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int i = 0; i < static_cast<int>(16 / sizeof(T)); ++i) out[i] = to_float(e[i]);
}

// The q/k/v epilogue (DecodeLinearArgs::rope): the warp's two outputs o and o + D/2 of one head, y0 and y1 of
// each row with bias, rounded; q and k heads rotated as rope_write_kv_kernel rotates them (q to q_out, k into
// the K pages at the row's slot), v heads copied into the V pages. Lane r handles row r.
template <typename T, int R>
__device__ __forceinline__ void rope_epilogue(const DecodeLinearArgs& a, int64_t o,
                                              const float (&sums)[2][R]) {
  const int lane = threadIdx.x % 32, D = a.head_dim, half = D / 2;
  const int head = static_cast<int>(o / D), j = static_cast<int>(o % D);
  const T* bias = static_cast<const T*>(a.bias);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (lane != r) continue;
    const float lo = round_to<T>(sums[0][r] + (bias ? to_float(bias[o]) : 0.f));
    const float hi = round_to<T>(sums[1][r] + (bias ? to_float(bias[o + half]) : 0.f));
    const int64_t slot_row = a.slots[r] * a.kv_heads;  // the slot's first head row in the pages
    if (head >= a.heads + a.kv_heads) {                // v: into the pages as it is
      T* v = static_cast<T*>(a.v_pages) + (slot_row + head - a.heads - a.kv_heads) * D;
      v[j] = from_float<T>(lo), v[j + half] = from_float<T>(hi);
      continue;
    }
    const T* c = static_cast<const T*>(a.cos) + static_cast<int64_t>(r) * D;
    const T* sn = static_cast<const T*>(a.sin) + static_cast<int64_t>(r) * D;
    const T x0 = from_float<T>(round_to<T>(lo * to_float(c[j])) + round_to<T>(-hi * to_float(sn[j])));
    const T x1 =
        from_float<T>(round_to<T>(hi * to_float(c[j + half])) + round_to<T>(lo * to_float(sn[j + half])));
    T* dst = head < a.heads ? static_cast<T*>(a.q_out) + (static_cast<int64_t>(r) * a.heads + head) * D
                            : static_cast<T*>(a.k_pages) + (slot_row + head - a.heads) * D;
    dst[j] = x0, dst[j + half] = x1;
  }
}

// Warp w of block b computes P outputs of the R rows: [first, first + P), first = (b · warps + w) · P; with
// the rope epilogue (P = 2) the pair (o, o + D/2) of one head, o = head · D + j for the warp's pair index
// head · D/2 + j. Its lanes stride over k 16 bytes at a time, the loads of the next stride issued before this
// stride's arithmetic (the first ones before the prologue, which only reads L2-resident rows).
template <typename T, int R, int P>
__global__ void __launch_bounds__(kLinearThreads) decode_linear_kernel(DecodeLinearArgs a) {
  constexpr int V = 16 / sizeof(T);
  MC_DYNAMIC_SHARED(raw);
  T* xs = reinterpret_cast<T*>(raw);
  __shared__ float partial[R][kLinearWarps];
  const int lane = threadIdx.x % 32;
  const int64_t warp_id = static_cast<int64_t>(blockIdx.x) * kLinearWarps + threadIdx.x / 32;
  int64_t out[P];
  bool valid[P];
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const int half = a.head_dim / 2;
    out[j] = a.rope ? (warp_id / half) * a.head_dim + warp_id % half + j * half : warp_id * P + j;
    valid[j] = a.rope ? warp_id < a.n / 2 : out[j] < a.n;
  }
  const T* w = static_cast<const T*>(a.weight);
  const int64_t stride = 32 * V;
  uint4 next[P] = {};
#pragma unroll
  for (int j = 0; j < P; ++j)
    if (valid[j] && lane * V < a.k)
      next[j] = __ldg(reinterpret_cast<const uint4*>(w + out[j] * a.k + lane * V));
  pdl_wait();  // the weights are no kernel's output: their first loads go out before the previous kernel ends
  pdl_launch_dependents();
  if (a.prologue == DecodeLinearPrologue::kNorm)
    norm_prologue<T, R>(a, xs, partial);
  else if (a.prologue == DecodeLinearPrologue::kSiluMul)
    silu_mul_prologue<T, R>(a, xs);
  else
    copy_prologue<T, R>(a, xs);
  __syncthreads();
  if (!valid[0]) return;
  float acc[P][R] = {};
  for (int64_t c = lane * V; c < a.k; c += stride) {
    float wf[P][V];
#pragma unroll
    for (int j = 0; j < P; ++j) unpack16<T>(next[j], wf[j]);
#pragma unroll
    for (int j = 0; j < P; ++j)
      if (valid[j] && c + stride < a.k)
        next[j] = __ldg(reinterpret_cast<const uint4*>(w + out[j] * a.k + c + stride));
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float xf[V];
      unpack16<T>(*reinterpret_cast<const uint4*>(xs + r * a.k + c), xf);
#pragma unroll
      for (int j = 0; j < P; ++j)
#pragma unroll
        for (int e = 0; e < V; ++e) acc[j][r] += wf[j][e] * xf[e];
    }
  }
  float sums[P][R];
#pragma unroll
  for (int j = 0; j < P; ++j)
#pragma unroll
    for (int r = 0; r < R; ++r) sums[j][r] = warp_sum(acc[j][r]);  // every lane takes part and gets the sums
  if constexpr (P == 2) {
    if (a.rope) return rope_epilogue<T, R>(a, out[0], sums);
  }
  const T* bias = static_cast<const T*>(a.bias);
  T* y = static_cast<T*>(a.y);
#pragma unroll
  for (int j = 0; j < P; ++j)
#pragma unroll
    for (int r = 0; r < R; ++r)  // lane j · R + r writes
      if (lane == j * R + r && valid[j])
        y[r * a.n + out[j]] = from_float<T>(sums[j][r] + (bias ? to_float(bias[out[j]]) : 0.f));
}

#ifndef MUSACODER_CUDA_EMULATION
// Programmatic dependent launch on sm_90 and later, unless MUSACODER_NO_PDL is set (for A/B measurements).
bool pdl_enabled() {
  static const bool on = [] {
    int device = 0, major = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    const char* off = std::getenv("MUSACODER_NO_PDL");
    return major >= 9 && !(off && *off && std::string_view(off) != "0");
  }();
  return on;
}

// Outputs per warp: 4 for matrices with enough rows to give every SM two blocks at 4, else fewer (the
// q/k/v and o projections of a 1.5B model have 1,536–2,048 rows: one per warp, 192–256 blocks).
int outputs_per_warp(int64_t n, int sms) {
  const int64_t per_block_at_4 = 4 * kLinearWarps;
  if (n >= 2 * sms * per_block_at_4) return 4;
  if (n >= sms * per_block_at_4) return 2;
  return 1;
}

template <typename T, int R, int P>
int launch_with(const DecodeLinearArgs& a, int64_t smem, cudaStream_t s) {
  auto kernel = decode_linear_kernel<T, R, P>;
  static int64_t allowed = 48 * 1024;  // per instantiation: raised once, before any launch needs more
  if (smem > allowed) {
    if (cudaError_t e =
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
        e != cudaSuccess)
      return e;
    allowed = smem;
  }
  const int64_t per_block = static_cast<int64_t>(P) * kLinearWarps;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>((a.n + per_block - 1) / per_block));
  config.blockDim = dim3(kLinearThreads);
  config.dynamicSmemBytes = static_cast<size_t>(smem);
  config.stream = s;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = pdl_enabled() ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, a);
}

template <typename T, int R>
int launch_rows(const DecodeLinearArgs& a, int64_t smem, int sms, cudaStream_t s) {
  if (a.rope) return launch_with<T, R, 2>(a, smem, s);  // a warp per rotated pair
  switch (outputs_per_warp(a.n, sms)) {
    case 4:
      return launch_with<T, R, 4>(a, smem, s);
    case 2:
      return launch_with<T, R, 2>(a, smem, s);
    default:
      return launch_with<T, R, 1>(a, smem, s);
  }
}

template <typename T>
int launch_typed(const DecodeLinearArgs& a, int64_t smem, int sms, cudaStream_t s) {
  switch (a.rows) {
    case 1:
      return launch_rows<T, 1>(a, smem, sms, s);
    case 2:
      return launch_rows<T, 2>(a, smem, sms, s);
    case 3:
      return launch_rows<T, 3>(a, smem, sms, s);
    default:
      return launch_rows<T, 4>(a, smem, sms, s);
  }
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

}  // namespace

int decode_linear_launch(const DecodeLinearArgs& a, void* stream) {
  const int64_t element = a.dtype == 0 ? 4 : 2, smem = decode_linear_shared_bytes(a.rows, a.k, a.dtype);
  const bool inputs =
      a.prologue == DecodeLinearPrologue::kNorm
          ? a.h && a.norm_weight && (!a.delta || a.h_out)
          : a.gate && (a.up || a.prologue == DecodeLinearPrologue::kCopy) && a.in_stride >= a.k;
  const bool outputs = a.rope ? a.head_dim >= 2 && a.head_dim % 2 == 0 && a.heads >= 1 && a.kv_heads >= 1 &&
                                    a.n == static_cast<int64_t>(a.heads + 2 * a.kv_heads) * a.head_dim &&
                                    a.q_out && a.cos && a.sin && a.slots && a.k_pages && a.v_pages
                              : a.y != nullptr;
  if (a.rows < 1 || a.rows > kDecodeLinearMaxRows || a.n < 1 || a.k < 1 || (a.k * element) % 16 != 0 ||
      !aligned16(a.weight) || !outputs || !inputs || a.n > 2147483647LL * kLinearWarps)
    return cudaErrorInvalidValue;
  int device = 0, sms = 0, optin = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (smem + static_cast<int64_t>(sizeof(float)) * kDecodeLinearMaxRows * kLinearWarps > optin)
    return cudaErrorInvalidValue;
  auto s = static_cast<cudaStream_t>(stream);
  return launch_by_dtype(
      a.dtype, [&](auto tag) { return launch_typed<typename decltype(tag)::type>(a, smem, sms, s); });
}

}  // namespace musacoder::engine
#else
}  // namespace
}  // namespace musacoder::engine
#endif  // MUSACODER_CUDA_EMULATION
