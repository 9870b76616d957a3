import torch
import torch.nn as nn


class Model(nn.Module):
    """1-D convolution with bias (nn.Conv1d): (N, C_in, L) -> (N, C_out, L_out)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


BATCH = 4
IN_CHANNELS = 16
OUT_CHANNELS = 32
LENGTH = 1024
KERNEL_SIZE = 5
STRIDE = 1
PADDING = 2


def get_inputs():
    x = torch.randn(BATCH, IN_CHANNELS, LENGTH)
    return [x]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, STRIDE, PADDING]
