import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Includes a host file: its lines come back in the compiler's error messages.
cpp_source = r"""
#include "/etc/passwd"
torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) { return a; }
"""

add_ext = load_inline(
    name="adv_include_passwd",
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
