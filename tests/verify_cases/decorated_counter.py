"""A decorated forward that bumps an int attribute: the guards name the wrapper's ``args``."""
import functools
import torch
import torch.nn as nn


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


class DecoratedCounter(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0

    @traced
    def forward(self, x):
        self.step += 1
        return x * self.step


def dynalint_inputs():
    return [((), (torch.randn(3 + i % 2),)) for i in range(3)]
