import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
torch::Tensor scale_shift_forward(torch::Tensor x, double alpha, double beta) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    int64_t n = 1;
    for (int64_t s : xc.sizes()) n *= s;
    const float a = static_cast<float>(alpha);
    const float b = static_cast<float>(beta);
    const float* px = xc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) po[i] = px[i] * a + b;
    return out;
}
"""

scale_shift_ext = load_inline(
    name="ref_cpu_elementwise_scale_shift",
    cpp_sources=cpp_source,
    functions=["scale_shift_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scale_shift_ext.scale_shift_forward(x, self.alpha, self.beta)
