"""Same outputs and state as original.py: the call counter kept as a 0-d buffer instead of an int."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3))
        self.unused = nn.Parameter(torch.ones(3))
        self.register_buffer("calls", torch.tensor(0))

    def forward(self, x):
        print("step")
        self.calls += 1
        return x * self.w


def dynalint_inputs():
    return [((), (torch.randn(3),)) for _ in range(2)]
