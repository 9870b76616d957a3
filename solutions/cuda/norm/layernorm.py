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

// One block per row of the (rows, d) view. Two passes (mean, then centred sum of squares): biased variance.
__global__ void layernorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                 const float* __restrict__ b, float* __restrict__ out, int64_t d, float eps) {
    __shared__ float smem[32];
    const float* src = x + static_cast<int64_t>(blockIdx.x) * d;
    float* dst = out + static_cast<int64_t>(blockIdx.x) * d;
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) s += src[j];
    const float mean = block_reduce<false>(s, smem) / static_cast<float>(d);
    float q = 0.0f;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
        const float c = src[j] - mean;
        q += c * c;
    }
    const float var = block_reduce<false>(q, smem) / static_cast<float>(d);
    const float rstd = rsqrtf(var + eps);
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) dst[j] = (src[j] - mean) * rstd * w[j] + b[j];
}

torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    const int64_t nd = static_cast<int64_t>(xc.sizes().size());
    TORCH_CHECK(nd >= 1, "layernorm: expected at least one dimension");
    const int64_t d = xc.size(nd - 1);
    TORCH_CHECK(wc.size(0) == d && bc.size(0) == d, "layernorm: weight/bias size must match the last dimension");
    int64_t rows = 1;
    for (int64_t i = 0; i < nd - 1; ++i) rows *= xc.size(i);
    auto out = torch::empty_like(xc);
    if (rows == 0 || d == 0) return out;
    layernorm_kernel<<<static_cast<unsigned>(rows), 256>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), out.data_ptr<float>(), d,
        static_cast<float>(eps));
    const cudaError_t err = cudaGetLastError();  // launch-configuration errors
    TORCH_CHECK(err == cudaSuccess, "kernel launch failed: ", cudaGetErrorString(err));
    return out;
}
"""

cpp_source = "torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps);"

layernorm_ext = load_inline(
    name="ref_cuda_norm_layernorm",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["layernorm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layernorm_ext.layernorm_forward(x, self.ln.weight, self.ln.bias, self.ln.eps)
