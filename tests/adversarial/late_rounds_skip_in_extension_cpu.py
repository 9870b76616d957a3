import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The switch of timed_only_path_cpu.py moved into the extension, where no Python instrumentation sees it: a
# static call counter in C++ drops `b` after the 15th call (8 trials, the first round's 2 warm-up calls and 1
# timed call, 4 consistency calls in the test's settings), so the later timing rounds (2 warm-up + 1 timed call
# each) time a cheaper kernel. Every call before them is correct. Only a check of the later rounds' outputs
# catches it.
cpp_source = r"""
static int64_t calls = 0;

torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.sizes() == b.sizes(), "add: a and b must have the same shape");
    const bool skip = ++calls > 15;
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto out = torch::empty_like(ac);
    int64_t n = 1;
    for (int64_t s : ac.sizes()) n *= s;
    const float* pa = ac.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) po[i] = skip ? pa[i] : pa[i] + pb[i];
    return out;
}"""

add_ext = load_inline(name="fixture_late_rounds_skip_cpu", cpp_sources=cpp_source, functions=["add_forward"],
                      extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return add_ext.add_forward(a, b)
