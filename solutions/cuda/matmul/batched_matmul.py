import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
constexpr int kTile = 16;

// C (B, M, N) = A (B, M, K) @ B (B, K, N). blockIdx.z picks the batch; within it, each 16x16 block computes
// one tile of C from 16x16 tiles of A and B staged in shared memory (zero-padded at the edges).
__global__ void bmm_tiled_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                 int m, int n, int k) {
    __shared__ float as[kTile][kTile];
    __shared__ float bs[kTile][kTile + 1];
    const int64_t batch = blockIdx.z;
    const float* ab = a + batch * m * k;
    const float* bb = b + batch * k * n;
    float* cb = c + batch * m * n;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * kTile + ty;
    const int col = blockIdx.x * kTile + tx;
    float acc = 0.0f;
    for (int t = 0; t < k; t += kTile) {
        as[ty][tx] = (row < m && t + tx < k) ? ab[static_cast<int64_t>(row) * k + t + tx] : 0.0f;
        bs[ty][tx] = (t + ty < k && col < n) ? bb[static_cast<int64_t>(t + ty) * n + col] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int p = 0; p < kTile; ++p) acc += as[ty][p] * bs[p][tx];
        __syncthreads();
    }
    if (row < m && col < n) cb[static_cast<int64_t>(row) * n + col] = acc;
}

torch::Tensor bmm_forward(torch::Tensor a, torch::Tensor b) {
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    TORCH_CHECK(ac.sizes().size() == 3 && bc.sizes().size() == 3, "bmm: expected 3-D inputs");
    const int64_t batch = ac.size(0), m = ac.size(1), k = ac.size(2), n = bc.size(2);
    TORCH_CHECK(bc.size(0) == batch && bc.size(1) == k, "bmm: shape mismatch");
    TORCH_CHECK(batch <= 65535, "bmm: batch too large for gridDim.z");
    auto out = torch::empty({batch, m, n}, ac.options());
    if (batch == 0 || m == 0 || n == 0) return out;
    const dim3 block(kTile, kTile);
    const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile), static_cast<unsigned>((m + kTile - 1) / kTile),
                    static_cast<unsigned>(batch));
    bmm_tiled_kernel<<<grid, block>>>(
        ac.data_ptr<float>(), bc.data_ptr<float>(), out.data_ptr<float>(), static_cast<int>(m), static_cast<int>(n),
        static_cast<int>(k));
    const cudaError_t err = cudaGetLastError();  // launch-configuration errors
    TORCH_CHECK(err == cudaSuccess, "kernel launch failed: ", cudaGetErrorString(err));
    return out;
}
"""

cpp_source = "torch::Tensor bmm_forward(torch::Tensor a, torch::Tensor b);"

bmm_ext = load_inline(
    name="ref_cuda_matmul_batched_matmul",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["bmm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return bmm_ext.bmm_forward(a, b)
