"""A tensor-valued branch: one graph break per call that `dynalint fix --unsafe-fixes` removes."""
import torch
import torch.nn as nn


class Clipper(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        if h.abs().max() > 1.0:
            h = h / 2
        return torch.tanh(h)


def dynalint_inputs():
    return [((), (torch.randn(4, 8),)), ((), (torch.randn(4, 8) * 10,)), ((), (torch.randn(4, 8),))]
