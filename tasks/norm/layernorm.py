import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer normalisation over the last (hidden) dimension, with learnable weight and bias (nn.LayerNorm)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


BATCH = 32
SEQ = 64
HIDDEN = 512


def get_inputs():
    x = torch.randn(BATCH, SEQ, HIDDEN)
    return [x]


def get_init_inputs():
    return [HIDDEN]
