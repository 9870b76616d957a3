import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched matrix product: (B, M, K) @ (B, K, N) -> (B, M, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


B = 8
M = 128
K = 256
N = 128


def get_inputs():
    a = torch.randn(B, M, K)
    b = torch.randn(B, K, N)
    return [a, b]


def get_init_inputs():
    return []
