import torch
import torch.nn as nn


class Model(nn.Module):
    """Depthwise 2-D convolution (groups = channels, one 3x3 filter per channel) with bias."""

    def __init__(self, channels: int, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, stride=stride, padding=padding, groups=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


BATCH = 4
CHANNELS = 32
HEIGHT = 64
WIDTH = 64
KERNEL_SIZE = 3
STRIDE = 1
PADDING = 1


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    return [x]


def get_init_inputs():
    return [CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
