import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <cmath>

// RMSNorm over the last dimension (size d): out = x / sqrt(mean(x^2) + eps) * w.
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
    const float* px = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* in = px + r * d;
        float* dst = po + r * d;
        double ss = 0.0;
        for (int64_t j = 0; j < d; ++j) ss += static_cast<double>(in[j]) * in[j];
        const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + eps));
        for (int64_t j = 0; j < d; ++j) dst[j] = in[j] * inv * pw[j];
    }
    return out;
}
"""

rmsnorm_ext = load_inline(
    name="ref_cpu_norm_rmsnorm",
    cpp_sources=cpp_source,
    functions=["rmsnorm_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
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
