import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over the last dimension of a (batch, dim) tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


BATCH = 128
DIM = 4096


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []
