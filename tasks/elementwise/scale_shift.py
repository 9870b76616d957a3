import torch
import torch.nn as nn


class Model(nn.Module):
    """Affine map with scalar constants fixed at construction: out = x * alpha + beta."""

    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.alpha + self.beta


BATCH = 64
DIM = 16384
ALPHA = 1.5
BETA = -0.25


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return [ALPHA, BETA]
