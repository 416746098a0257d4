"""Input sets for factory.py: the explicit form, with constructor and call keyword arguments."""
import torch


def gate_inputs():
    x = torch.randn(2, 4)
    return [{"init_kwargs": {"dim": 4}, "args": (x,), "kwargs": {"scale": s}} for s in (1.0, 2.0, 3.0)]
