// The fused decoder-layer kernels; see fused_ops_cuda.h for what each computes.
//
// tests/unit/engine/fused_ops_emulated_test.cpp includes this file on the CPU with MUSACODER_CUDA_EMULATION
// defined (tests/support/cuda_emulation.h): the kernels run as written, the launchers are left out.
#ifndef MUSACODER_CUDA_EMULATION
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/cuda_dtype.cuh"
#endif

#include "engine/fused_ops_cuda.h"

namespace musacoder::engine {
namespace {

constexpr int kNormThreads = 256;
constexpr int kElementThreads = 256;

constexpr int kNormPerThread = 16;  // row elements a thread keeps in registers: rows up to 4,096 wide

// One block per row: h ← round(h + delta), then the normalised row scaled by the weight. The thread's
// elements (c = threadIdx.x + i · blockDim.x) stay in registers between the sum of squares and the scaling,
// so the row is read once; h, delta and the weight are all loaded in one predicated, fully unrolled loop
// before any is used, so a row costs one memory round trip (a decode step's rows are single vectors: the
// latency is the kernel's time). A row wider than kNormPerThread · kNormThreads reads h again in a second pass.
template <typename T>
__global__ void __launch_bounds__(kNormThreads) add_rms_norm_kernel(FusedArgs a) {
  T* h = static_cast<T*>(a.h) + blockIdx.x * a.cols;
  const T* delta = a.delta ? static_cast<const T*>(a.delta) + blockIdx.x * a.cols : nullptr;
  const T* w = static_cast<const T*>(a.weight);
  T* out = static_cast<T*>(a.out) + blockIdx.x * a.cols;
  const bool held = a.cols <= static_cast<int64_t>(kNormPerThread) * blockDim.x;
  float x[kNormPerThread], wv[kNormPerThread];
#pragma unroll
  for (int i = 0; i < kNormPerThread; ++i) {
    const int64_t c = threadIdx.x + static_cast<int64_t>(i) * blockDim.x;
    const bool in = c < a.cols;
    const float hv = in ? to_float(h[c]) : 0.f, dv = in && delta ? to_float(delta[c]) : 0.f;
    wv[i] = in ? to_float(w[c]) : 0.f;
    x[i] = delta ? round_to<T>(hv + dv) : hv;
  }
  float sq = 0.f;
#pragma unroll
  for (int i = 0; i < kNormPerThread; ++i) {
    const int64_t c = threadIdx.x + static_cast<int64_t>(i) * blockDim.x;
    if (delta && c < a.cols) h[c] = from_float<T>(x[i]);
    sq += x[i] * x[i];  // 0 past the row
  }
  for (int64_t c = threadIdx.x + static_cast<int64_t>(kNormPerThread) * blockDim.x; c < a.cols;
       c += blockDim.x) {
    float v = to_float(h[c]);
    if (delta) {
      v = round_to<T>(v + to_float(delta[c]));
      h[c] = from_float<T>(v);
    }
    sq += v * v;
  }
  __shared__ float partial[kNormThreads / 32];
  sq = warp_sum(sq);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sq;
  __syncthreads();
  if (threadIdx.x < 32) {
    float s = threadIdx.x < kNormThreads / 32 ? partial[threadIdx.x] : 0.f;
    s = warp_sum(s);
    if (threadIdx.x == 0) partial[0] = s;
  }
  __syncthreads();
  const float rstd = rsqrtf(partial[0] / static_cast<float>(a.cols) + a.eps);
#pragma unroll
  for (int i = 0; i < kNormPerThread; ++i) {
    const int64_t c = threadIdx.x + static_cast<int64_t>(i) * blockDim.x;
    if (c < a.cols) out[c] = from_float<T>(wv[i] * round_to<T>(x[i] * rstd));
  }
  if (held) return;
  for (int64_t c = threadIdx.x + static_cast<int64_t>(kNormPerThread) * blockDim.x; c < a.cols;
       c += blockDim.x)
    out[c] = from_float<T>(to_float(w[c]) * round_to<T>(to_float(h[c]) * rstd));
}

template <typename T>
__global__ void __launch_bounds__(kElementThreads) silu_mul_kernel(FusedArgs a) {
  const T* gate = static_cast<const T*>(a.delta);
  const T* up = static_cast<const T*>(a.weight);
  T* out = static_cast<T*>(a.out);
  const int64_t n = a.rows * a.cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t in = (i / a.cols) * a.in_stride + i % a.cols;
    const float g = to_float(gate[in]);
    const float s = round_to<T>(g / (1.0f + expf(-g)));
    out[i] = from_float<T>(s * to_float(up[in]));
  }
}

// One thread per (row, head, j < D/2): the pair (j, j + D/2) of one head.
template <typename T>
__global__ void __launch_bounds__(kElementThreads) rope_kernel(FusedArgs a) {
  const T* x = static_cast<const T*>(a.h);
  const T* cs = static_cast<const T*>(a.cos);
  const T* sn = static_cast<const T*>(a.sin);
  T* out = static_cast<T*>(a.out);
  const int half = a.head_dim / 2;
  const int64_t pairs_per_row = a.cols / 2, n = a.rows * pairs_per_row;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / pairs_per_row, k = i % pairs_per_row;
    const int64_t head = k / half, j = k % half;
    const int64_t base = row * a.cols + head * a.head_dim, in = row * a.in_stride + head * a.head_dim;
    const float lo = to_float(x[in + j]), hi = to_float(x[in + j + half]);
    const T* c = cs + row * a.head_dim;
    const T* s = sn + row * a.head_dim;
    out[base + j] = from_float<T>(round_to<T>(lo * to_float(c[j])) + round_to<T>(-hi * to_float(s[j])));
    out[base + j + half] =
        from_float<T>(round_to<T>(hi * to_float(c[j + half])) + round_to<T>(lo * to_float(s[j + half])));
  }
}

// One rotated pair (x[j], x[j + half]) of a head row, rounded as rope_kernel rounds it.
template <typename T>
__device__ __forceinline__ void rotate_pair(const T* x, const T* c, const T* s, int j, int half, T* out0,
                                            T* out1) {
  const float lo = to_float(x[j]), hi = to_float(x[j + half]);
  const T a = from_float<T>(round_to<T>(lo * to_float(c[j])) + round_to<T>(-hi * to_float(s[j])));
  const T b =
      from_float<T>(round_to<T>(hi * to_float(c[j + half])) + round_to<T>(lo * to_float(s[j + half])));
  out0[j] = a, out0[j + half] = b;
  if (out1) out1[j] = a, out1[j + half] = b;
}

// Per row: (heads + kv_heads) × half rotated pairs (q heads, then k heads, which also go to the cache), then
// kv_heads × head_dim elements of v copied to the cache.
template <typename T>
__global__ void __launch_bounds__(kElementThreads) rope_write_kv_kernel(RopeKvArgs a) {
  const int D = a.head_dim, half = D / 2;
  const int64_t pairs = static_cast<int64_t>(a.heads + a.kv_heads) * half;
  const int64_t per_row = pairs + static_cast<int64_t>(a.kv_heads) * D, n = a.rows * per_row;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / per_row, r = i % per_row;
    const int64_t slot_row = a.slots[row] * a.kv_heads;  // the slot's first head row in the pages
    const T* c = static_cast<const T*>(a.cos) + row * D;
    const T* s = static_cast<const T*>(a.sin) + row * D;
    if (r < pairs) {
      const int head = static_cast<int>(r / half), j = static_cast<int>(r % half);
      if (head < a.heads) {
        rotate_pair<T>(static_cast<const T*>(a.q) + row * a.q_stride + head * D, c, s, j, half,
                       static_cast<T*>(a.q_out) + (row * a.heads + head) * D, nullptr);
      } else {
        const int kh = head - a.heads;
        rotate_pair<T>(static_cast<const T*>(a.k) + row * a.k_stride + kh * D, c, s, j, half,
                       static_cast<T*>(a.k_out) + (row * a.kv_heads + kh) * D,
                       static_cast<T*>(a.k_pages) + (slot_row + kh) * D);
      }
    } else {
      const int64_t e = r - pairs, kh = e / D, d = e % D;
      static_cast<T*>(a.v_pages)[(slot_row + kh) * D + d] =
          static_cast<const T*>(a.v)[row * a.v_stride + kh * D + d];
    }
  }
}

#ifndef MUSACODER_CUDA_EMULATION
unsigned grid_for(int64_t n) {
  return grid_stride_blocks(n, kElementThreads, 65535);
}

template <template <typename> class Launch, typename Args>
int by_dtype(const Args& a, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  return launch_by_dtype(a.dtype, [&](auto tag) { Launch<typename decltype(tag)::type>::run(a, s); });
}

template <typename T>
struct NormLaunch {
  static void run(const FusedArgs& a, cudaStream_t s) {
    add_rms_norm_kernel<T><<<static_cast<unsigned>(a.rows), kNormThreads, 0, s>>>(a);
  }
};
template <typename T>
struct SiluMulLaunch {
  static void run(const FusedArgs& a, cudaStream_t s) {
    silu_mul_kernel<T><<<grid_for(a.rows * a.cols), kElementThreads, 0, s>>>(a);
  }
};
template <typename T>
struct RopeLaunch {
  static void run(const FusedArgs& a, cudaStream_t s) {
    rope_kernel<T><<<grid_for(a.rows * a.cols / 2), kElementThreads, 0, s>>>(a);
  }
};

template <typename T>
struct RopeKvLaunch {
  static void run(const RopeKvArgs& a, cudaStream_t s) {
    const int64_t per_row = static_cast<int64_t>(a.heads + a.kv_heads) * (a.head_dim / 2) +
                            static_cast<int64_t>(a.kv_heads) * a.head_dim;
    rope_write_kv_kernel<T><<<grid_for(a.rows * per_row), kElementThreads, 0, s>>>(a);
  }
};

}  // namespace

int add_rms_norm_launch(const FusedArgs& a, void* stream) {
  if (a.rows < 1 || a.cols < 1 || a.rows > 2147483647) return a.rows == 0 ? 0 : cudaErrorInvalidValue;
  return by_dtype<NormLaunch>(a, stream);
}

int silu_mul_launch(const FusedArgs& a, void* stream) {
  if (a.rows * a.cols == 0) return 0;
  return by_dtype<SiluMulLaunch>(a, stream);
}

int rope_launch(const FusedArgs& a, void* stream) {
  if (a.head_dim < 2 || a.head_dim % 2 != 0 || a.cols % a.head_dim != 0) return cudaErrorInvalidValue;
  if (a.rows * a.cols == 0) return 0;
  return by_dtype<RopeLaunch>(a, stream);
}

int rope_write_kv_launch(const RopeKvArgs& a, void* stream) {
  if (a.head_dim < 2 || a.head_dim % 2 != 0 || a.heads < 1 || a.kv_heads < 1) return cudaErrorInvalidValue;
  if (a.rows == 0) return 0;
  return by_dtype<RopeKvLaunch>(a, stream);
}

}  // namespace musacoder::engine
#else
}  // namespace
}  // namespace musacoder::engine
#endif  // MUSACODER_CUDA_EMULATION
