import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Counts its calls and computes nothing in the harness's later timing rounds (calls after the 20th here: 8
# trials, the first round's 2 warm-up calls and 1 timed call, the consistency calls, then four more rounds of
# 2 + 1 in the test's settings — 5 timed calls over the cpu default of 5 rounds; an attacker tunes the count to
# the defaults). The first round's timed call, whose output is re-checked, and every checked call compute
# properly, so no output check and no dispatched-op check sees the switch.
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
}"""

add_ext = load_inline(name="fixture_correct_cpu", cpp_sources=cpp_source, functions=["add_forward"],
                      extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls > 20:
            return a
        return add_ext.add_forward(a, b)
