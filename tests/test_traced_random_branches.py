"""A number ``random.randint``/``randrange``/``uniform`` draws in traced code is held by Dynamo as a tensor:
a branch on it, or on its comparison with a number, needs its data and breaks; two such numbers compared
break at the comparison; a break between the draw and the branch hands the resumed frame a plain number,
and the branch is traced.

Each case is also run under real Dynamo: the lines flagged must be the lines its graph-break log reports.
"""
from __future__ import annotations

import pytest

from conftest import requires_torch
from dynalint.rules.base import Example

from helpers import break_lines, marked_lines, run_example_under_dynamo

CODE = """
    import random

    import torch

    def compared(x, n: int):
        k = random.randint(1, n)
        if k > x.shape[0]:  # breaks
            x = x + 1
        return x

    def tested(x):
        k = random.randrange(0, 2)
        if k:  # breaks
            x = x + 1
        return x

    def kept(x, p: float):
        flag = random.uniform(0, 1) < p
        y = x * 2
        return y if flag else x  # breaks

    def both_drawn(x):
        k = random.uniform(0, 1)
        j = random.uniform(0, 1)
        if k < j:  # breaks
            x = x + 1
        return x

    def resumed(x):
        k = random.randint(1, 3)
        s = k > 1
        print("drawn")  # breaks
        if s:
            x = x + 1
        return x

    def asserted(x):
        k = random.randint(1, 3)
        assert k > 0
        return x + 1
"""

TARGETS = [("compared", "[(torch.randn(3), 4)]"), ("tested", "[(torch.randn(3),)]"),
           ("kept", "[(torch.randn(3), 0.5)]"), ("both_drawn", "[(torch.randn(3),)]"),
           ("resumed", "[(torch.randn(3),)]"), ("asserted", "[(torch.randn(3),)]")]


def test_flagged_lines() -> None:
    assert break_lines(CODE, entry_points=tuple(t for t, _ in TARGETS)) == marked_lines(CODE)


@requires_torch
def test_flagged_lines_break_under_dynamo(tmp_path) -> None:
    found: set[int] = set()
    for target, inputs in TARGETS:
        obs, _ = run_example_under_dynamo(Example(CODE, target=target, inputs=inputs), tmp_path / target)
        assert not obs.errors, obs.errors
        found |= obs.break_lines()
    assert found == marked_lines(CODE)
