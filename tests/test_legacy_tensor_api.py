"""Legacy tensor API that older model code still uses: ``torch.autograd.Variable(x)`` is built by a function
Dynamo skips, and ``x.new()`` is a tensor, so ``x.data.new().resize_as_(x)`` is a resize Dynamo does not
trace.  Each case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("variable-and-resize", """
    import torch
    from torch.autograd import Variable


    def f(pred: torch.Tensor, gt: torch.Tensor):
        cost = Variable(pred.new_zeros(pred.shape))  # breaks
        err = (pred - gt).abs() + cost
        valid = err.data.new().resize_as_(err)  # breaks
        valid.copy_((gt > 0).float())
        return (err * valid).sum()
    """, "f", "[(torch.rand(2, 8), torch.rand(2, 8))]"),
    ("variable-by-its-module", """
    import torch


    def f(x: torch.Tensor):
        y = x * 2
        return torch.autograd.Variable(y).sum()  # breaks
    """, "f", "[(torch.rand(2, 8),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
