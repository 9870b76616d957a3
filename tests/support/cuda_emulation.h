// Runs CUDA kernels written for the engine and the model on the CPU, to check their logic (indexing,
// synchronisation, numerics) where no GPU exists: a block's threads are std::threads, __syncthreads a
// std::barrier, a warp shuffle an exchange through a per-warp buffer between two barriers, cp.async a memcpy
// (completed at once, so pipeline waits are no-ops), and the element types are host structs with the device's
// rounding (bf16 round-to-nearest-even, fp16 through _Float16). Include this, define
// MUSACODER_CUDA_EMULATION, then include the .cu; compile with -fno-strict-aliasing (the kernels reinterpret
// 16-byte loads, as CUDA code does). What it cannot see: timing, races that a barrier hides on the CPU but
// not on the GPU, and device limits.
#pragma once

#include <algorithm>
#include <barrier>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __expf expf
#define __shared__ static  // blocks run one at a time: a function-level static is the block's shared array
#define MC_DYNAMIC_SHARED(name) unsigned char* name = cuda_emulation::shared_memory()
#define rsqrtf(x) (1.0f / sqrtf(x))
using std::max;
using std::min;

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
struct uint4 {
  uint32_t x, y, z, w;
};
struct float4 {
  float x, y, z, w;
};
inline float4 make_float4(float a, float b, float c, float d) {
  return {a, b, c, d};
}
struct __nv_bfloat16 {
  uint16_t bits;
};
struct __half {
  _Float16 v;
};

namespace cuda_emulation {
struct Warp {
  float buf[32];
  std::barrier<> bar{32};
};
struct Block {
  explicit Block(unsigned threads) : bar(threads), warps(threads / 32) {}
  std::barrier<> bar;
  std::vector<Warp> warps;
  std::vector<unsigned char> smem;
};
inline thread_local Block* block = nullptr;
inline unsigned char* shared_memory() {
  const auto p = reinterpret_cast<uintptr_t>(block->smem.data());
  return reinterpret_cast<unsigned char*>((p + 15) & ~uintptr_t(15));
}
}  // namespace cuda_emulation

inline thread_local Dim3 threadIdx, blockIdx, blockDim, gridDim;

inline void __syncthreads() {
  cuda_emulation::block->bar.arrive_and_wait();
}
inline float __shfl_xor_sync(unsigned, float v, int mask) {
  const unsigned lane = threadIdx.x % 32;
  cuda_emulation::Warp& w = cuda_emulation::block->warps[threadIdx.x / 32];
  w.buf[lane] = v;
  w.bar.arrive_and_wait();
  const float r = w.buf[lane ^ static_cast<unsigned>(mask)];
  w.bar.arrive_and_wait();
  return r;
}
// Global-memory atomics and fences: blocks run one at a time, so plain operations are atomic; the fence
// orders nothing that is not ordered already. __ldcg (a load that skips L1) is a load.
inline int atomicAdd(int* p, int v) {
  const int old = *p;
  *p = old + v;
  return old;
}
inline int atomicExch(int* p, int v) {
  const int old = *p;
  *p = v;
  return old;
}
inline void __threadfence() {}
inline float __ldcg(const float* p) {
  return *p;
}
// __ldg (a load through the read-only path) of a 16-byte vector is a load.
inline uint4 __ldg(const uint4* p) {
  return *p;
}
inline void __pipeline_memcpy_async(void* dst, const void* src, size_t n) {
  std::memcpy(dst, src, n);
}
inline void __pipeline_commit() {}
inline void __pipeline_wait_prior(int) {}

// core/cuda_dtype.cuh's helpers for the host types.
namespace musacoder {
inline float to_float(float x) {
  return x;
}
inline float to_float(__half x) {
  return static_cast<float>(x.v);
}
inline float to_float(__nv_bfloat16 x) {
  const uint32_t u = static_cast<uint32_t>(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
template <typename T>
T from_float(float x);
template <>
inline float from_float<float>(float x) {
  return x;
}
template <>
inline __half from_float<__half>(float x) {
  return {static_cast<_Float16>(x)};
}
template <>
inline __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7FFF + ((u >> 16) & 1);  // round to nearest even (finite inputs)
  return {static_cast<uint16_t>(u >> 16)};
}
template <typename T>
inline float round_to(float x) {
  return to_float(from_float<T>(x));
}
inline float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
}  // namespace musacoder

namespace cuda_emulation {
// kernel() over `grid`, `threads` (a multiple of 32) per block, one block at a time, with `shared_bytes` of
// dynamic shared memory filled with 0xFF before each block (NaN floats wherever a kernel reads what it did
// not write). Blocks run in index order (x fastest), or in reverse order with `reversed` — a GPU promises
// neither, so a kernel whose blocks coordinate is run both ways.
inline void launch(Dim3 grid, unsigned threads, size_t shared_bytes, const std::function<void()>& kernel,
                   bool reversed = false) {
  Block state(threads);
  std::barrier<> between{threads};
  const unsigned blocks = grid.x * grid.y * grid.z;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      block = &state;
      threadIdx = {t, 0, 0};
      blockDim = {threads, 1, 1};
      gridDim = grid;
      for (unsigned i = 0; i < blocks; ++i) {
        const unsigned b = reversed ? blocks - 1 - i : i;
        if (t == 0) state.smem.assign(shared_bytes + 16, 0xFF);
        between.arrive_and_wait();
        blockIdx = {b % grid.x, b / grid.x % grid.y, b / (grid.x * grid.y)};
        kernel();
        between.arrive_and_wait();
      }
    });
  }
  for (auto& th : pool) th.join();
}
}  // namespace cuda_emulation
