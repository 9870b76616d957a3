import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <algorithm>
#include <vector>

// x is viewed as (outer, R, inner) around the reduced dimension; out as (outer, inner).

// inner == 1: the reduced elements are contiguous, so one warp sums one row with a shuffle tree.
__global__ void sum_rows_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t outer, int64_t r) {
    const int64_t warps_per_block = blockDim.x / 32;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= outer) return;  // whole warp leaves together
    const float* src = x + row * r;
    float acc = 0.0f;
    for (int64_t k = lane; k < r; k += 32) acc += src[k];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    if (lane == 0) out[row] = acc;
}

// inner > 1: one thread per output; neighbouring threads read neighbouring addresses (coalesced).
__global__ void sum_strided_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t outer, int64_t r,
                                   int64_t inner) {
    const int64_t total = outer * inner;
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
        const int64_t o = t / inner, i = t % inner;
        const float* src = x + o * r * inner + i;
        float acc = 0.0f;
        for (int64_t k = 0; k < r; ++k) acc += src[k * inner];
        out[t] = acc;
    }
}

torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim) {
    auto xc = x.contiguous();
    const int64_t nd = static_cast<int64_t>(xc.sizes().size());
    if (dim < 0) dim += nd;
    TORCH_CHECK(dim >= 0 && dim < nd, "sum_dim: dim out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < nd; ++d) inner *= xc.size(d);
    const int64_t r = xc.size(dim);
    std::vector<int64_t> out_sizes(xc.sizes().begin(), xc.sizes().end());
    out_sizes[dim] = 1;  // keepdim=True
    auto out = torch::empty(out_sizes, xc.options());
    if (outer * inner == 0) return out;
    const int threads = 256;
    if (inner == 1) {
        const int64_t rows_per_block = threads / 32;
        const int blocks = static_cast<int>((outer + rows_per_block - 1) / rows_per_block);
        sum_rows_kernel<<<blocks, threads>>>(xc.data_ptr<float>(), out.data_ptr<float>(), outer, r);
    } else {
        const int blocks = static_cast<int>(std::min<int64_t>((outer * inner + threads - 1) / threads, 65535));
        sum_strided_kernel<<<blocks, threads>>>(xc.data_ptr<float>(), out.data_ptr<float>(), outer, r, inner);
    }
    const cudaError_t err = cudaGetLastError();  // launch-configuration errors
    TORCH_CHECK(err == cudaSuccess, "kernel launch failed: ", cudaGetErrorString(err));
    return out;
}
"""

cpp_source = "torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim);"

sum_dim_ext = load_inline(
    name="ref_cuda_reduction_sum_dim",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["sum_dim_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sum_dim_ext.sum_dim_forward(x, self.dim)
