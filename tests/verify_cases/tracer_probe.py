"""A function whose result tells whether a tracer (sys.settrace) was active while it ran."""
import sys

import torch


def traced_scale(x):
    return x * (3.0 if sys.gettrace() is not None else 2.0)


def dynalint_inputs():
    return [(torch.ones(3),) for _ in range(2)]
