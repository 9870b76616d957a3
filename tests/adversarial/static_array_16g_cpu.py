import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# A 16 GiB static array: compiles in a blink (.bss), the loader maps all of it, and touching it
# exhausts the machine's memory. -mcmodel=medium puts it in .lbss, so it links next to the
# extension's other static data (with the default model the link fails: relocation truncated).
cpp_source = r"""
static float scratch[(1ull << 32)];  // 4 Gi floats = 16 GiB

torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto out = torch::empty_like(ac);
    const int64_t n = ac.numel();
    const float* pa = ac.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) scratch[i * 4096] = pa[i] + pb[i];  // strided: one page per element
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) po[i] = scratch[i * 4096];
    return out;
}
"""

add_ext = load_inline(
    name="adv_static_array_16g",
    cpp_sources=cpp_source,
    functions=["add_forward"],
    extra_cflags=["-O3", "-fopenmp", "-mcmodel=medium"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return add_ext.add_forward(a, b)
