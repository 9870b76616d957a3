import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The kernel's host code writes a file outside the work directory.
cpp_source = r"""
#include <cstdio>

torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {
    if (FILE* f = fopen("/tmp/mooreeval-adversarial-canary-cpp", "a")) {
        fputs("written by a candidate\n", f);
        fclose(f);
    }
    auto out = torch::empty_like(a);
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < a.numel(); ++i) po[i] = pa[i] + pb[i];
    return out;
}
"""

add_ext = load_inline(
    name="adv_write_outside_cpp",
    cpp_sources=cpp_source,
    functions=["add_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return add_ext.add_forward(a, b)
