"""Functions that ``map``, ``filter`` and ``functools.reduce`` call: Dynamo inlines a lambda or a function of
the checked code there, so what breaks in its body breaks the caller's graph, on the lambda's line, and
what it returns is what the caller gets.  Each case is also run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("map-with-a-lambda", """
    import torch


    def f(x):
        xs = [x, x * 2]
        vals = list(map(lambda t: t.sum().item(), xs))  # breaks
        return x * vals[0]
    """, "f", "[(torch.ones(3),)]"),
    ("reduce-with-a-lambda", """
    import functools

    import torch


    def f(x):
        xs = [x, x * 2]
        return functools.reduce(lambda a, b: a + b.sum().item(), xs, 0.0)  # breaks
    """, "f", "[(torch.ones(3),)]"),
    ("mapped-values-are-tensors", """
    import torch


    def double(t):
        return t * 2


    def f(x):
        ys = list(map(double, [x, x + 1]))
        if ys[0].sum() > 0:  # breaks
            return ys[1]
        return ys[0]
    """, "f", "[(torch.ones(3),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
