"""A ``collections.namedtuple`` instance built in compiled code holds the values passed to it: its fields,
read by name or by position, are those values (a tensor's ``.item()`` breaks, a branch on one breaks), as
Dynamo traces them.  Each case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("fields-by-name-and-position", """
    from collections import namedtuple

    import torch

    RouterOutput = namedtuple("RouterOutput", ["probs", "weights", "indices"])
    Pair = namedtuple("Pair", "low, high")


    def route(logits: torch.Tensor) -> RouterOutput:
        probs = logits.softmax(-1)
        w, i = probs.topk(2, dim=-1)
        return RouterOutput(probs, w, i)


    def f(logits: torch.Tensor):
        r = route(logits)
        top = r.probs.max().item()  # breaks
        p = Pair(low=logits.min(), high=logits.max())
        if p.high > 0:  # breaks
            return r.weights * top
        lo, hi = p
        return r[1] * 2 + lo + hi
    """, "f", "[(torch.randn(5, 4),)]"),
    ("fields-that-are-not-tensors", """
    import collections

    import torch

    Config = collections.namedtuple("Config", "scale shift")


    def f(x: torch.Tensor):
        c = Config(2.0, x.shape[0])
        if c.scale > 1:
            x = x * c.scale
        return x[: c.shift]
    """, "f", "[(torch.randn(5, 4),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
