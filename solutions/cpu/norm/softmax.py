import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <cmath>

// Softmax over the last dimension; every other dimension is a row.
torch::Tensor softmax_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    const int64_t nd = static_cast<int64_t>(xc.sizes().size());
    TORCH_CHECK(nd >= 1, "softmax: expected at least one dimension");
    const int64_t d = xc.size(nd - 1);
    int64_t rows = 1;
    for (int64_t i = 0; i < nd - 1; ++i) rows *= xc.size(i);
    auto out = torch::empty_like(xc);
    const float* px = xc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* in = px + r * d;
        float* dst = po + r * d;
        float m = in[0];
        for (int64_t j = 1; j < d; ++j) m = in[j] > m ? in[j] : m;
        double s = 0.0;
        for (int64_t j = 0; j < d; ++j) {
            const float e = std::exp(in[j] - m);
            dst[j] = e;
            s += e;
        }
        const float inv = static_cast<float>(1.0 / s);
        for (int64_t j = 0; j < d; ++j) dst[j] *= inv;
    }
    return out;
}
"""

softmax_ext = load_inline(
    name="ref_cpu_norm_softmax",
    cpp_sources=cpp_source,
    functions=["softmax_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax_ext.softmax_forward(x)
