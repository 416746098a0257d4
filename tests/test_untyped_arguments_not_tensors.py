"""An argument of compiled code that nothing shows to be a tensor is taken for one, but not where its use shows
otherwise: compared with a member of an enum class of the module (``mode == Mode.EVAL``, ``mode is Mode.TRAIN``)
it holds members.  A tensor argument compared with a number breaks, and so does using the text of one.  Each case
is also run under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("enum-member", """
    import enum

    import torch


    class Choice(enum.Enum):
        pass


    class Mode(Choice):
        TRAIN = 1
        EVAL = 2


    def f(x, mode):
        if mode is Mode.TRAIN:
            return x * 0.9
        elif mode == Mode.EVAL:
            return x
        return -x
    """, "f", "[(torch.randn(3), Mode.EVAL)]"),
    ("tensor-compared-and-formatted", """
    import torch


    def f(x: torch.Tensor, t: torch.Tensor):
        if t == 2:  # breaks
            return x
        key = f"{x.sum()}"
        return x * len(key)  # breaks
    """, "f", "[(torch.randn(3), torch.tensor(3))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
