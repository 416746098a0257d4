"""A generator handed to a function that takes an iterable: ``math.prod``/``math.fsum`` of one break whatever
it yields (Dynamo cannot pass it on), and so do ``max``/``min`` of one with ``default=`` (Dynamo's handler
takes no such keyword); a list, or ``max`` of a generator without ``default=``, is traced.  Dynamo cannot resume
after such a call (it cannot rebuild the generator it started): the rest of the function runs eagerly, and
nothing after it breaks.  So it is after a break inside a generator expression, whatever consumes it (``sum``,
``list``, ``any``...).  Each case is also run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("generators-to-math-and-max", """
    import math

    import torch


    def f(x: torch.Tensor):
        a = math.prod(s for s in x.shape)  # breaks
        b = math.prod([s for s in x.shape]) + max(s for s in x.shape)
        c = max((s for s in x.shape), default=0)
        d = math.fsum(float(s) for s in (1, 2))
        return x * (a + b + c + d)
    """, "f", "[(torch.randn(4, 3),)]"),
    ("a-default-for-a-generator", """
    import torch


    def f(x: torch.Tensor):
        k = max((s for s in x.shape), default=0)  # breaks
        return x * k + x.sum().item()
    """, "f", "[(torch.randn(4, 3),)]"),
    ("a-generator-whose-body-breaks", """
    from typing import List

    import torch


    def f(xs: List[torch.Tensor], y: torch.Tensor):
        frac = sum(float(x.mean()) for x in xs)  # breaks
        if y.sum() > 0:
            y = y + frac
        return y
    """, "f", "[([torch.randn(3), torch.randn(3)], torch.ones(2))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
