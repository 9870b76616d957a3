import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <algorithm>

// One thread per element, grid-stride loop: out = a * b + c.
__global__ void fma_kernel(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ c,
                           float* __restrict__ out, int64_t n) {
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
        out[i] = fmaf(a[i], b[i], c[i]);
}

torch::Tensor fma_forward(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    TORCH_CHECK(a.sizes() == b.sizes() && a.sizes() == c.sizes(), "fma: a, b and c must have the same shape");
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto cc = c.contiguous();
    auto out = torch::empty_like(ac);
    int64_t n = 1;
    for (int64_t s : ac.sizes()) n *= s;
    if (n == 0) return out;
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
    fma_kernel<<<blocks, threads>>>(
        ac.data_ptr<float>(), bc.data_ptr<float>(), cc.data_ptr<float>(), out.data_ptr<float>(), n);
    const cudaError_t err = cudaGetLastError();  // launch-configuration errors
    TORCH_CHECK(err == cudaSuccess, "kernel launch failed: ", cudaGetErrorString(err));
    return out;
}
"""

cpp_source = "torch::Tensor fma_forward(torch::Tensor a, torch::Tensor b, torch::Tensor c);"

fma_ext = load_inline(
    name="ref_cuda_elementwise_fma",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["fma_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return fma_ext.fma_forward(a, b, c)
