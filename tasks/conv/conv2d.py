import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D convolution with a square kernel and bias (nn.Conv2d): (N, C_in, H, W) -> (N, C_out, H_out, W_out)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


BATCH = 2
IN_CHANNELS = 16
OUT_CHANNELS = 32
HEIGHT = 32
WIDTH = 32
KERNEL_SIZE = 3
STRIDE = 1
PADDING = 1


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
