import torch
import torch.nn as nn


class Model(nn.Module):
    """Index (int64) of the maximum over one dimension: (16, 256, 256) -> (16, 256)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.dim)


BATCH = 16
DIM1 = 256
DIM2 = 256
REDUCE_DIM = 1


def get_inputs():
    x = torch.randn(BATCH, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [REDUCE_DIM]
