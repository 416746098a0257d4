"""``%``-formatting a tensor is not traced ("torch.* op returned non-Tensor"): a parameter annotated as a
tensor or a tensor the function computes breaks there; a parameter that is a tensor only by the analysis's
guess (the callers pass a string) formats as the string it is. Each case is also run under real Dynamo (torch
2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("a-tensor-formatted", """
    import torch


    def f(x: torch.Tensor):
        label = "%s" % x.sum()  # breaks
        return x * len(label)
    """, "f", "[(torch.randn(3),)]"),
    ("a-string-the-callers-pass", """
    import torch


    def f(x, tag):
        label = "%s:%d" % (tag, 3)
        return x + len(label)
    """, "f", "[(torch.randn(3), 'enc')]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
