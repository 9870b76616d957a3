import torch
import torch.nn as nn


class Model(nn.Module):
    """RMS normalisation over the last dimension: out = x / sqrt(mean(x^2) + eps) * weight.

    The weight is initialised to 1 + 0.1 * randn(hidden) so that a solution which ignores it fails.
    """

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden) + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


BATCH = 32
SEQ = 64
HIDDEN = 512
EPS = 1e-6


def get_inputs():
    x = torch.randn(BATCH, SEQ, HIDDEN)
    return [x]


def get_init_inputs():
    return [HIDDEN, EPS]
