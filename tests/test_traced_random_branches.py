"""A number ``random.randint``/``randrange``/``uniform`` draws in traced code is held by Dynamo as a tensor:
a branch on it, or on its comparison with a number, needs its data and breaks; two such numbers compared
break at the comparison; a break between the draw and the branch hands the resumed frame a plain number,
and the branch is traced.  As an index, a slice bound or the bound of a stepped ``range`` it breaks too.

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


#: a traced random number as an index of a tensor or a list, as a slice bound, and as the bound of a
#: `range` that a loop steps (the function then runs eagerly: the slice after it does not break); a
#: `range` never stepped is traced, and so is an index by a number that crossed a break; one drawn after a
#: break is held as a tensor in the frame resumed there; a number drawn on one path only is the draw where that path
#: runs, and slices an `nn.ModuleList` as it slices a list; added to a number from tensor data, it breaks
USES = """
    import random

    import torch

    def indexed(x: torch.Tensor):
        k = random.randint(0, 1)
        return x[k]  # breaks

    def picked(x):
        rows = [x, x + 1]
        k = random.randrange(2)
        return rows[k]  # breaks

    def sliced(x: torch.Tensor):
        k = random.randint(1, 2)
        return x[:k]  # breaks

    def looped(x: torch.Tensor):
        k = random.randint(1, 2)
        for i in range(k):  # breaks
            x = x + i
        return x[:k]

    def unstepped(x):
        k = random.randint(1, 2)
        r = range(k)
        return x + 1

    def from_object(x: torch.Tensor):
        rng = random.Random(0)
        k = rng.randint(0, 1)
        return x[k]  # breaks

    def crossed(x: torch.Tensor):
        k = random.randint(0, 1)
        print("drawn")  # breaks
        return x[k]

    LAYERS = torch.nn.ModuleList([torch.nn.Identity() for _ in range(3)])

    def dropped_quantizers(x: torch.Tensor):
        n_q = len(LAYERS)
        if x.dim() == 1:
            n_q = random.randint(1, n_q)
        for layer in LAYERS[:n_q]:  # breaks
            x = layer(x)
        return x

    def drawn_after(x: torch.Tensor):
        print("start")  # breaks
        f0 = random.randint(0, 1)
        w = random.randint(1, 2)
        return x[f0:f0 + w]  # breaks

    def jittered(x: torch.Tensor):
        c = x.long().tolist()  # breaks
        k = c[0] + random.randint(-1, 1)  # breaks
        return x * k
"""

USE_TARGETS = ("indexed", "picked", "sliced", "looped", "unstepped", "from_object", "crossed", "drawn_after",
               "dropped_quantizers", "jittered")


def test_flagged_uses() -> None:
    assert break_lines(USES, entry_points=USE_TARGETS) == marked_lines(USES)


@requires_torch
def test_flagged_uses_break_under_dynamo(tmp_path) -> None:
    found: set[int] = set()
    for target in USE_TARGETS:
        obs, _ = run_example_under_dynamo(Example(USES, target=target, inputs="[(torch.randn(3),)]"),
                                          tmp_path / target)
        assert not obs.errors, obs.errors
        found |= obs.break_lines()
    assert found == marked_lines(USES)
