import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# An honest pattern: the CUDA extension is built only where a GPU is available, parameters are moved
# with .cuda() in __init__, and the grid is sized from the device's properties.
cuda_source = r"""
#include <algorithm>

// One thread per element, grid-stride loop.
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
        const float v = x[i];
        out[i] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor relu_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    int64_t n = 1;
    for (int64_t s : xc.sizes()) n *= s;
    if (n == 0) return out;
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
    relu_kernel<<<blocks, threads>>>(
        xc.data_ptr<float>(), out.data_ptr<float>(), n);
    const cudaError_t err = cudaGetLastError();  // launch-configuration errors
    TORCH_CHECK(err == cudaSuccess, "kernel launch failed: ", cudaGetErrorString(err));
    return out;
}"""
cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

relu_ext = None
if torch.cuda.is_available():
    relu_ext = load_inline(name="honest_guarded_build_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                           functions=["relu_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.bound = torch.zeros(1).cuda()
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if relu_ext is None:
            return torch.relu(x)
        return relu_ext.relu_forward(x)
