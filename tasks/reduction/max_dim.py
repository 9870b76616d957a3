import torch
import torch.nn as nn


class Model(nn.Module):
    """Maximum values (not indices) over one dimension: (16, 256, 256) -> (16, 256)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=self.dim)[0]


BATCH = 16
DIM1 = 256
DIM2 = 256
REDUCE_DIM = 2


def get_inputs():
    x = torch.randn(BATCH, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [REDUCE_DIM]
