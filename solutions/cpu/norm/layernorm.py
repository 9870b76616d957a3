import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <cmath>

// LayerNorm over the last dimension (size d): biased variance, out = (x - mean) / sqrt(var + eps) * w + b.
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
    const float* px = xc.data_ptr<float>();
    const float* pw = wc.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* in = px + r * d;
        float* dst = po + r * d;
        double s = 0.0;
        for (int64_t j = 0; j < d; ++j) s += in[j];
        const double mean = s / static_cast<double>(d);
        double v = 0.0;
        for (int64_t j = 0; j < d; ++j) {
            const double c = in[j] - mean;
            v += c * c;
        }
        const float rstd = static_cast<float>(1.0 / std::sqrt(v / static_cast<double>(d) + eps));
        const float meanf = static_cast<float>(mean);
        for (int64_t j = 0; j < d; ++j) dst[j] = (in[j] - meanf) * rstd * pw[j] + pb[j];
    }
    return out;
}
"""

layernorm_ext = load_inline(
    name="ref_cpu_norm_layernorm",
    cpp_sources=cpp_source,
    functions=["layernorm_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layernorm_ext.layernorm_forward(x, self.ln.weight, self.ln.bias, self.ln.eps)
