import torch
import torch.nn as nn


class Model(nn.Module):
    """Fully connected layer followed by ReLU: out = relu(x @ W^T + b)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


BATCH = 128
IN_FEATURES = 512
OUT_FEATURES = 256


def get_inputs():
    x = torch.randn(BATCH, IN_FEATURES)
    return [x]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
