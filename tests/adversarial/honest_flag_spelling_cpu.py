import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest: the fixture's correct add with flags written as KernelBench's prompt example writes them
# (an empty string, two flags in one string); load_inline builds that, so must MooreEval.
cpp_source = r"""
torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.sizes() == b.sizes(), "add: a and b must have the same shape");
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto out = torch::empty_like(ac);
    int64_t n = 1;
    for (int64_t s : ac.sizes()) n *= s;
    const float* pa = ac.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
    return out;
}
"""

add_ext = load_inline(
    name="fixture_correct_cpu",
    cpp_sources=cpp_source,
    functions=["add_forward"],
    extra_cflags=["", "-O3 -fopenmp"],  # KernelBench example style: PyTorch builds it
    extra_ldflags=[" -fopenmp", ""],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return add_ext.add_forward(a, b)
