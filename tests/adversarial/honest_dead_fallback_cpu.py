import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# An honest pattern: a PyTorch path for devices the kernel does not support, dead on the cpu backend.
cpp_source = r"""
#include <cmath>

torch::Tensor relu_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    int64_t n = 1;
    for (int64_t s : xc.sizes()) n *= s;
    const float* px = xc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const float v = px[i];
        po[i] = v > 0.0f ? v : 0.0f;
    }
    return out;
}"""

relu_ext = load_inline(name="honest_dead_fallback_cpu", cpp_sources=cpp_source, functions=["relu_forward"],
                       extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.is_cuda or x.dtype != torch.float32:
            return torch.relu(x)
        try:
            return relu_ext.relu_forward(x)
        except RuntimeError:
            return torch.nn.functional.relu(x)
