import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D convolution (no padding), plus an extra per-channel bias, then ReLU.

    (N, C_in, H, W) -> (N, C_out, H - k + 1, W - k + 1); the extra bias has shape (C_out, 1, 1).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x) + self.bias)


BATCH = 2
IN_CHANNELS = 16
OUT_CHANNELS = 32
HEIGHT = 32
WIDTH = 32
KERNEL_SIZE = 3


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE]
