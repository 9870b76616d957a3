import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
// Block-wide reductions for blockDim.x a multiple of 32 (<= 1024); `smem` holds 32 floats.
// Every thread gets the result; the trailing barrier lets the caller reuse `smem` at once.
__device__ __forceinline__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

template <bool kMax>
__device__ float block_reduce(float v, float* smem) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
    v = kMax ? warp_max(v) : warp_sum(v);
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        const float identity = kMax ? __int_as_float(0xff800000) : 0.0f;  // -inf or 0
        v = lane < nwarps ? smem[lane] : identity;
        v = kMax ? warp_max(v) : warp_sum(v);
        if (lane == 0) smem[0] = v;
    }
    __syncthreads();
    v = smem[0];
    __syncthreads();
    return v;
}

// One block per row of the (rows, d) view: out = x * rsqrt(mean(x^2) + eps) * w.
__global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out,
                               int64_t d, float eps) {
    __shared__ float smem[32];
    const float* src = x + static_cast<int64_t>(blockIdx.x) * d;
    float* dst = out + static_cast<int64_t>(blockIdx.x) * d;
    float q = 0.0f;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) q += src[j] * src[j];
    const float ms = block_reduce<false>(q, smem) / static_cast<float>(d);
    const float inv = rsqrtf(ms + eps);
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) dst[j] = src[j] * inv * w[j];
}

torch::Tensor rmsnorm_forward(torch::Tensor x, torch::Tensor weight, double eps) {
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    const int64_t nd = static_cast<int64_t>(xc.sizes().size());
    TORCH_CHECK(nd >= 1, "rmsnorm: expected at least one dimension");
    const int64_t d = xc.size(nd - 1);
    TORCH_CHECK(wc.size(0) == d, "rmsnorm: weight size must match the last dimension");
    int64_t rows = 1;
    for (int64_t i = 0; i < nd - 1; ++i) rows *= xc.size(i);
    auto out = torch::empty_like(xc);
    if (rows == 0 || d == 0) return out;
    rmsnorm_kernel<<<static_cast<unsigned>(rows), 256>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), out.data_ptr<float>(), d, static_cast<float>(eps));
    const cudaError_t err = cudaGetLastError();  // launch-configuration errors
    TORCH_CHECK(err == cudaSuccess, "kernel launch failed: ", cudaGetErrorString(err));
    return out;
}
"""

cpp_source = "torch::Tensor rmsnorm_forward(torch::Tensor x, torch::Tensor weight, double eps);"

rmsnorm_ext = load_inline(
    name="ref_cuda_norm_rmsnorm",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["rmsnorm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        # Same construction as Model, so the same seed gives the same weight.
        self.weight = nn.Parameter(torch.ones(hidden) + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rmsnorm_ext.rmsnorm_forward(x, self.weight, self.eps)
