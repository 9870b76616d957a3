import torch
import torch.nn as nn


class Model(nn.Module):
    """Residual add followed by layer normalisation over the last dimension: out = LayerNorm(x + residual)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.ln(x + residual)


BATCH = 256
HIDDEN = 1024


def get_inputs():
    x = torch.randn(BATCH, HIDDEN)
    residual = torch.randn(BATCH, HIDDEN)
    return [x, residual]


def get_init_inputs():
    return [HIDDEN]
