"""Annotations written through an alias of ``typing`` (``import typing as tp``: ``tp.List[torch.Tensor]``,
``tp.Optional[torch.Tensor]``), the house style of some audio libraries, promise what ``List[...]`` and
``Optional[...]`` promise.  Each case is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("aliased-typing", """
    import typing as tp

    import torch


    def f(logits: tp.List[torch.Tensor], scale: tp.Optional[torch.Tensor] = None):
        frac = float((logits[0] < 0).float().mean())  # breaks
        if scale is not None:
            frac = frac * float(scale.mean())  # breaks
        return logits[0] * frac
    """, "f", "[([torch.randn(3), torch.randn(3)], torch.rand(2))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
