import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The kernel's host code opens a TCP connection.
cpp_source = r"""
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

torch::Tensor add_forward(torch::Tensor a, torch::Tensor b) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(80);
    inet_pton(AF_INET, "203.0.113.1", &addr.sin_addr);
    connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    close(fd);
    return a + b;
}
"""

add_ext = load_inline(
    name="adv_network_cpp",
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
