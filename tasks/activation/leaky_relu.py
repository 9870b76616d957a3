import torch
import torch.nn as nn


class Model(nn.Module):
    """Leaky ReLU: out = x if x >= 0 else negative_slope * x."""

    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


BATCH = 16
DIM = 65536
NEGATIVE_SLOPE = 0.05


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
