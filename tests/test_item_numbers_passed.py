"""A number the calling code takes from tensor data before the call (``s = sigmas[i].item()``, outside
compiled code) reaches the compiled function as a Python float: ``math.log`` of it folds while tracing (a guard
on the value, no break), as it does for any float argument.  The case also runs under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import break_tests

ITEM_PASSED = """
import math

import torch


def denoise(x, sigma):
    c_noise = torch.full((x.shape[0],), math.log(sigma) / 4)
    return x / sigma + c_noise[:, None]


def main():
    f = torch.compile(denoise, backend="eager")
    sigmas = torch.tensor([10.0, 3.0, 1.0])
    x = torch.randn(2, 3)
    for i in range(len(sigmas)):
        s = sigmas[i].item()
        x = f(x, s)
    return x
"""

test_check, test_dynamo = break_tests(ITEM_PASSED, set(), "[()]")
