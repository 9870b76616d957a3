import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <algorithm>

// One thread per element, grid-stride loop.
__global__ void scale_shift_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n, float alpha, float beta) {
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
        const float v = x[i];
        out[i] = v * alpha + beta;
    }
}

torch::Tensor scale_shift_forward(torch::Tensor x, double alpha_d, double beta_d) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    int64_t n = 1;
    for (int64_t s : xc.sizes()) n *= s;
    if (n == 0) return out;
    const float alpha = static_cast<float>(alpha_d);
    const float beta = static_cast<float>(beta_d);
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
    scale_shift_kernel<<<blocks, threads>>>(
        xc.data_ptr<float>(), out.data_ptr<float>(), n, alpha, beta);
    const cudaError_t err = cudaGetLastError();  // launch-configuration errors
    TORCH_CHECK(err == cudaSuccess, "kernel launch failed: ", cudaGetErrorString(err));
    return out;
}
"""

cpp_source = "torch::Tensor scale_shift_forward(torch::Tensor x, double alpha_d, double beta_d);"

scale_shift_ext = load_inline(
    name="ref_cuda_elementwise_scale_shift",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["scale_shift_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scale_shift_ext.scale_shift_forward(x, self.alpha, self.beta)
