"""Builtins that apply a function to each element: ``max``/``min`` with a ``key=`` that gives tensors compare
tensor data in Python (Dynamo's handler of the builtin takes no ``key=`` there, "invalid call to builtin op
handler"), whatever the elements are (``min(range(n), key=lambda i: losses[i])`` picking the best member, or
``min(d, key=d.get)`` the best entry of a dict of losses); so do they with ``key=`` over objects of a class of
the checked code (``max(hyps, key=lambda h: h.score)``: the handler takes constants only), and
``map(float, t)`` reads each element of a tensor as ``float(t[i])`` does.  Each case is also run under real
Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("key-gives-tensors", """
    from typing import List

    import torch


    def f(losses: List[torch.Tensor], sizes: List[int]):
        best = min(range(len(losses)), key=lambda i: losses[i])  # breaks
        widest = max(range(len(sizes)), key=lambda i: sizes[i])
        return losses[0] * widest, best
    """, "f", "[([torch.tensor(2.0), torch.tensor(1.0)], [3, 5])]"),
    ("key-is-a-dict-lookup", """
    import torch
    import torch.nn.functional as F


    def f(logits: torch.Tensor, labels: torch.Tensor):
        nlls = {t: F.cross_entropy(logits / t, labels) for t in (0.5, 1.0, 2.0)}
        best_t = min(nlls, key=nlls.get)  # breaks
        sizes = {"a": 3, "b": 1}
        first = sorted(sizes, key=sizes.get)[0]
        return logits / best_t, first
    """, "f", "[(torch.randn(8, 3), torch.randint(0, 3, (8,)))]"),
    ("map-a-conversion", """
    import torch


    def f(x: torch.Tensor):
        means = list(map(float, x.mean(0)))  # breaks
        return x * len(means)
    """, "f", "[(torch.rand(4, 3),)]"),
    ("key-over-objects", """
    import torch


    class Hyp:
        def __init__(self, score: float):
            self.score = score


    def f(x: torch.Tensor):
        hyps = [Hyp(1.0), Hyp(2.0)]
        best = max(hyps, key=lambda h: h.score)  # breaks
        order = max(range(3), key=lambda k: [3, 1, 2][k])
        return x * best.score * order
    """, "f", "[(torch.ones(2),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
