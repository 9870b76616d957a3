import torch
import torch.nn as nn


class Model(nn.Module):
    """Logistic sigmoid: out = 1 / (1 + exp(-x))."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


BATCH = 16
DIM = 65536


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []
