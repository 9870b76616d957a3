import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Embeds a host file into the library with the assembler's .incbin.
cpp_source = r"""
__asm__(".section .rodata\n.global host_file\nhost_file:\n.incbin \"/etc/hostname\"\n.byte 0\n.previous");
extern "C" const char host_file[];

torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(host_file[0] == 0, host_file);  // leaks the file into the error message
    return a;
}
"""

add_ext = load_inline(
    name="adv_incbin",
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
