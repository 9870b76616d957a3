// The CUDA part of the lean API: current/default streams, device guards, device properties
// and the launch checks, forwarding to c10::cuda in the shim.
#pragma once

#include <cuda_runtime.h>

namespace c10::cuda {

class CUDAStream {
 public:
  explicit CUDAStream(cudaStream_t s, DeviceIndex d) : s_(s), d_(d) {}
  cudaStream_t stream() const { return s_; }
  operator cudaStream_t() const { return s_; }  // NOLINT: implicit as in c10
  DeviceIndex device_index() const { return d_; }
  Device device() const { return Device(DeviceType::CUDA, d_); }

 private:
  cudaStream_t s_;
  DeviceIndex d_;
};

inline CUDAStream getCurrentCUDAStream(DeviceIndex d = -1) {
  const DeviceIndex idx = d == -1 ? mc_lean_cuda_current_device() : d;
  return CUDAStream(static_cast<cudaStream_t>(mc_lean_cuda_current_stream(idx)), idx);
}
inline CUDAStream getDefaultCUDAStream(DeviceIndex d = -1) {
  const DeviceIndex idx = d == -1 ? mc_lean_cuda_current_device() : d;
  return CUDAStream(static_cast<cudaStream_t>(mc_lean_cuda_default_stream(idx)), idx);
}
inline DeviceIndex current_device() {
  return mc_lean_cuda_current_device();
}

// Sets the device for the guard's lifetime (c10::cuda::CUDAGuard's contract).
class CUDAGuard {
 public:
  explicit CUDAGuard(DeviceIndex d) : prev_(mc_lean_cuda_current_device()) { mc_lean_cuda_set_device(d); }
  explicit CUDAGuard(Device d) : CUDAGuard(d.index() == -1 ? mc_lean_cuda_current_device() : d.index()) {}
  ~CUDAGuard() { mc_lean_cuda_set_device(prev_); }
  CUDAGuard(const CUDAGuard&) = delete;
  CUDAGuard& operator=(const CUDAGuard&) = delete;

 private:
  DeviceIndex prev_;
};
// An OptionalCUDAGuard built from a device acts as a CUDAGuard; a CPU device is a no-op.
class OptionalCUDAGuard {
 public:
  OptionalCUDAGuard() = default;
  explicit OptionalCUDAGuard(Device d) { set_device(d); }
  explicit OptionalCUDAGuard(DeviceIndex d) { set_device(Device(DeviceType::CUDA, d)); }
  ~OptionalCUDAGuard() {
    if (active_) mc_lean_cuda_set_device(prev_);
  }
  OptionalCUDAGuard(const OptionalCUDAGuard&) = delete;
  OptionalCUDAGuard& operator=(const OptionalCUDAGuard&) = delete;
  void set_device(Device d) {
    if (!d.is_cuda()) return;
    if (!active_) prev_ = mc_lean_cuda_current_device(), active_ = true;
    mc_lean_cuda_set_device(d.index() == -1 ? mc_lean_cuda_current_device() : d.index());
  }

 private:
  bool active_ = false;
  DeviceIndex prev_ = -1;
};

}  // namespace c10::cuda

namespace at::cuda {
using c10::cuda::CUDAGuard;
using c10::cuda::CUDAStream;
using c10::cuda::getCurrentCUDAStream;
using c10::cuda::getDefaultCUDAStream;
using c10::cuda::OptionalCUDAGuard;
inline const cudaDeviceProp* getCurrentDeviceProperties() {
  return static_cast<const cudaDeviceProp*>(mc_lean_cuda_device_properties(mc_lean_cuda_current_device()));
}
inline const cudaDeviceProp* getDeviceProperties(int64_t d) {
  return static_cast<const cudaDeviceProp*>(mc_lean_cuda_device_properties(static_cast<int8_t>(d)));
}
}  // namespace at::cuda

#define C10_CUDA_CHECK(EXPR)                                                       \
  do {                                                                             \
    const cudaError_t mooreeval_lean_err = (EXPR);                                 \
    if (mooreeval_lean_err != cudaSuccess)                                         \
      mc_lean_cuda_check(static_cast<int>(mooreeval_lean_err), __FILE__, __func__, \
                         static_cast<uint32_t>(__LINE__));                         \
  } while (0)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())
#define AT_CUDA_CHECK(EXPR) C10_CUDA_CHECK(EXPR)
