import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <cmath>

torch::Tensor sigmoid_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    int64_t n = 1;
    for (int64_t s : xc.sizes()) n *= s;
    const float* px = xc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const float v = px[i];
        po[i] = 1.0f / (1.0f + std::exp(-v));
    }
    return out;
}
"""

sigmoid_ext = load_inline(
    name="ref_cpu_activation_sigmoid",
    cpp_sources=cpp_source,
    functions=["sigmoid_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sigmoid_ext.sigmoid_forward(x)
