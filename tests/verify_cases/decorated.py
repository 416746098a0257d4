"""A module whose forward is wrapped by a decorator (as transformers wraps its models' forward)."""
import functools

import torch
import torch.nn as nn


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


class Decorated(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    @traced
    def forward(self, x, scale=2.0):
        return torch.relu(self.lin(x)) * scale


def dynalint_inputs():
    return [((), (torch.randn(2, 4),)) for _ in range(4)]
