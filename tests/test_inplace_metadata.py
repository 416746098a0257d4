"""Changing a tensor's metadata in place, checked against Dynamo (torch 2.13).  A method that changes the
shape or strides in place (its aten op is tagged ``inplace_view``: ``unsqueeze_``, ``t_``, ``transpose_``)
breaks on a tensor the compiled code was given ("Getting an inplace view on a graph input is not
supported") and is traced on one it made; ``t.data = ...`` breaks on a tensor the compiled code made
("Failed to mutate tensor data attribute") and is traced on one it was given, also where the tensor entered
a frame resumed after a break."""
from __future__ import annotations

from helpers import break_tests

CODE = """
import torch


@torch.compile(backend="eager")
def reshaped(x, w):
    y = x.clone()
    y.unsqueeze_(0)
    w.data = w * 2
    x.t_()
    return y.sum() + x.sum() + w


@torch.compile(backend="eager")
def reset(x):
    y = x.clone()
    y.data = torch.zeros_like(y)
    print("reset")
    y.data = torch.ones_like(y)
    return y + 1


def main():
    reshaped(torch.randn(4, 3), torch.randn(()))
    reset(torch.randn(4))
"""

test_check, test_dynamo = break_tests(CODE, {(9, "DYN105"), (16, "DYN105"), (17, "DYN105")}, "[()]")
