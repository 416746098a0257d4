"""Same outputs as original.py; ``unused`` gets a zero gradient instead of none."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))
        self.unused = nn.Parameter(torch.ones(3))
        self.calls = 0

    def forward(self, x):
        print("step")
        self.calls += 1
        return x * self.w + 0 * self.unused


def dynalint_inputs():
    return [((), (torch.randn(3),)) for _ in range(2)]
