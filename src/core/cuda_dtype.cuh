// Helpers shared by the CUDA kernels (engine, model, train). Device: float conversion of the three element
// types (float, __half, __nv_bfloat16; from_float rounds to nearest even), a warp-wide sum and the dynamic
// shared memory declaration. Host: the launch of a kernel template for the element type an argument struct's
// `dtype` code names (0 float32, 1 float16, 2 bfloat16), and the block count of a grid-stride loop.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

// A kernel's dynamic shared memory as 16-byte-aligned bytes (tests/support/cuda_emulation.h defines its own).
#define MC_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]

namespace musacoder {

__device__ __forceinline__ float to_float(float x) {
  return x;
}
__device__ __forceinline__ float to_float(__half x) {
  return __half2float(x);
}
__device__ __forceinline__ float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}
// x rounded to T and back: the value a torch op in dtype T leaves.
template <typename T>
__device__ __forceinline__ float round_to(float x) {
  return to_float(from_float<T>(x));
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// launch(DtypeTag<T>{}) with T the element type `dtype` names; returns what launch returns, or (launch
// returning nothing) cudaGetLastError(); cudaErrorInvalidValue for an unknown code.
template <typename T>
struct DtypeTag {
  using type = T;
};
template <typename Launch>
int launch_by_dtype(int dtype, Launch&& launch) {
  auto run = [&](auto tag) -> int {
    if constexpr (std::is_void_v<decltype(launch(tag))>) {
      launch(tag);
      return static_cast<int>(cudaGetLastError());
    } else {
      return static_cast<int>(launch(tag));
    }
  };
  switch (dtype) {
    case 0:
      return run(DtypeTag<float>{});
    case 1:
      return run(DtypeTag<__half>{});
    case 2:
      return run(DtypeTag<__nv_bfloat16>{});
    default:
      return cudaErrorInvalidValue;
  }
}

// Blocks of `threads` for a grid-stride loop over n elements: one element per thread, at least 1, at most
// `cap`.
inline unsigned grid_stride_blocks(int64_t n, int threads, int64_t cap) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > cap ? cap : blocks));
}

}  // namespace musacoder
