import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix-vector product with the vector as a column: (M, K) @ (K, 1) -> (M, 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, x)


M = 1024
K = 2048


def get_inputs():
    a = torch.randn(M, K)
    x = torch.randn(K, 1)
    return [a, x]


def get_init_inputs():
    return []
