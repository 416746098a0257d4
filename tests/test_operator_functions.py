"""The ``operator`` module's functions that read a tensor as a Python bool or index, checked against Dynamo
(torch 2.13): ``operator.truth(t)`` and ``operator.not_(t)`` break ("Failed to trace builtin operator", with
``capture_scalar_outputs`` too), ``operator.index(t)`` breaks as ``int(t)`` does and is traced with the
flag."""
from __future__ import annotations

from helpers import break_tests, check

CODE = """
import operator

import torch


@torch.compile(backend="eager")
def gated(x):
    a = x * operator.truth(x.abs().sum())
    b = a * operator.not_(x.sum() > 0)
    return b * operator.index(x.sum().long()) * operator.index(x.shape[0])


def main(x):
    return gated(x)
"""

test_check, test_dynamo = break_tests(CODE, {(8, "DYN102"), (9, "DYN102"), (10, "DYN102")},
                                      "[(torch.randn(4, 3),)]")


def test_the_flag_keeps_only_the_index() -> None:
    assert {d.line for d in check(CODE, capture_scalar_outputs=True) if d.kind == "graph-break"} == {8, 9}
