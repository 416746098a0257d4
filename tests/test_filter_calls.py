"""``filter(fn, xs)`` takes the truth of what ``fn`` returns for each element: a tensor there is a Python bool
of tensor data, and the graph breaks at the call (measured on torch 2.13: "Data-dependent branching" inside
Dynamo's ``filter``, placed at the call); a function that returns Python values, and ``filter(None, xs)`` of
Python values, are traced."""
from __future__ import annotations

from helpers import break_tests

CODE = """
import torch


@torch.compile(backend="eager")
def kept_rows(x, names):
    rows = list(x.unbind(0))
    kept = list(filter(lambda r: r.sum() > 0, rows))
    short = list(filter(lambda n: len(n) < 3, names))
    nonempty = list(filter(None, names))
    return len(kept) + len(short) + len(nonempty) + x


def main(x):
    return kept_rows(x, ["ab", "abcd", ""])
"""

test_check, test_dynamo = break_tests(CODE, {(7, "DYN101")}, "[(torch.randn(4, 3),)]")
