import torch
import torch.nn as nn


class Model(nn.Module):
    """Square matrix product: (N, N) @ (N, N) -> (N, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


N = 256


def get_inputs():
    a = torch.randn(N, N)
    b = torch.randn(N, N)
    return [a, b]


def get_init_inputs():
    return []
