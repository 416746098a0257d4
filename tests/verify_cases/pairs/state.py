"""Same outputs as original.py; the call counter is not kept."""
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
        return x * self.w


def dynalint_inputs():
    return [((), (torch.randn(3),)) for _ in range(2)]
