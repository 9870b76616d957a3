import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over one dimension, keeping it as size 1: (16, 256, 256) -> (16, 1, 256)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


BATCH = 16
DIM1 = 256
DIM2 = 256
REDUCE_DIM = 1


def get_inputs():
    x = torch.randn(BATCH, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [REDUCE_DIM]
