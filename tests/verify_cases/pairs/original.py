"""The reference of the pairs: each other file here computes the same outputs and differs in one
thing a call leaves behind (a gradient that is None, module state, printed output)."""
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
        return x * self.w


def dynalint_inputs():
    return [((), (torch.randn(3),)) for _ in range(2)]
