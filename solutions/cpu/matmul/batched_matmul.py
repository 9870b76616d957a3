import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
// C (B, M, N) = A (B, M, K) @ B (B, K, N); one output row per iteration of the parallel loop.
torch::Tensor bmm_forward(torch::Tensor a, torch::Tensor b) {
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    TORCH_CHECK(ac.sizes().size() == 3 && bc.sizes().size() == 3, "bmm: expected 3-D inputs");
    const int64_t batch = ac.size(0), m = ac.size(1), k = ac.size(2), n = bc.size(2);
    TORCH_CHECK(bc.size(0) == batch && bc.size(1) == k, "bmm: shape mismatch");
    auto out = torch::empty({batch, m, n}, ac.options());
    const float* pa = ac.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* pc = out.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < batch * m; ++row) {
        const int64_t bi = row / m;
        const float* arow = pa + row * k;
        const float* bmat = pb + bi * k * n;
        float* crow = pc + row * n;
        for (int64_t j = 0; j < n; ++j) crow[j] = 0.0f;
        for (int64_t p = 0; p < k; ++p) {
            const float av = arow[p];
            const float* brow = bmat + p * n;
            for (int64_t j = 0; j < n; ++j) crow[j] += av * brow[j];
        }
    }
    return out;
}
"""

bmm_ext = load_inline(
    name="ref_cpu_matmul_batched_matmul",
    cpp_sources=cpp_source,
    functions=["bmm_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return bmm_ext.bmm_forward(a, b)
