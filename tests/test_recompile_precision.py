"""Recompile hazards that Dynamo does not turn into recompiles, measured on torch 2.13 (``backend="eager"``).

A global instance whose own methods only write into its tensors (``self.seen[idx] = labels``) fails no
guard however often they run: Dynamo guards on a tensor's metadata, not its values. One of them that
counts in a Python attribute (``self.steps += 1``) recompiles on every call.
"""
from __future__ import annotations

from helpers import check

GLOBALS = """
    import torch


    class Thresholds:
        def __init__(self, n):
            self.base = 0.9
            self.selected = torch.full((n,), -1, dtype=torch.long)

        def thresholds(self):
            return self.base * (self.selected[:3] >= 0).float()

        def update(self, idx, labels):
            self.selected[idx] = labels
            self.selected.clamp_(min=-1)


    class Counter:
        def __init__(self):
            self.steps = 0

        def update(self):
            self.steps += 1


    flex = Thresholds(8)
    count = Counter()


    @torch.compile
    def step(x, idx):
        thr = flex.thresholds()
        flex.update(idx, (x > 0).long())
        return x * thr


    @torch.compile
    def step2(x):
        count.update()
        return x * count.steps
"""


def _dyn201(code: str) -> set[str]:
    return {d.message.split("`")[1] for d in check(code) if d.code == "DYN201"}


def test_a_global_whose_methods_write_only_into_its_tensors_is_not_a_recompile():
    assert _dyn201(GLOBALS) == {"count"}


def test_any_python_write_keeps_the_finding():
    # the method sets a Python attribute too
    assert _dyn201(GLOBALS.replace("            self.selected[idx] = labels\n",
                                   "            self.selected[idx] = labels\n            self.base = 0.8\n")) \
        == {"count", "flex"}
    # the global is changed from outside its methods
    assert _dyn201(GLOBALS + "\n\n    def tune():\n        flex.base = 0.8\n") == {"count", "flex"}
    # an in-place method that changes the tensor's shape
    assert _dyn201(GLOBALS.replace("clamp_(min=-1)", "resize_(4)")) == {"count", "flex"}


BRANCHES = """
    import random
    import torch


    @torch.compile
    def explore(x, n: int):
        if random.random() < 0.1:
            return random.randrange(n)
        return x.argmax().item()


    @torch.compile
    def jitter(x):
        if random.random() < 0.5:
            return x + 1
        return x - 1
"""


def test_a_branch_that_returns_without_a_graph_may_leave_the_resumed_frame_skipped():
    """``explore``: when the first call draws below 0.1, the frame resumed after ``random.random()``
    returns with no graph and Dynamo skips it for good; above, it compiles and guards on the number.
    Which one comes first is not known: no finding.  ``jitter`` compiles either way and recompiles."""
    assert [d.line for d in check(BRANCHES) if d.code == "DYN204"] == [14]
    assert [d.line for d in check(BRANCHES.replace("return random.randrange(n)", "return x[:n].sum()"))
            if d.code == "DYN204"] == [7, 14]


GRAD_MODES = """
    import torch

    lin = torch.nn.Linear(3, 3)


    @torch.compile
    def head(x, targets=None):
        y = lin(x)
        if targets is None:
            return y
        return ((y - targets) ** 2).mean()


    def main():
        for _ in range(3):
            head(torch.randn(2, 3), torch.randn(2, 3))
        with torch.no_grad():
            for _ in range(3):
                head(torch.randn(2, 3))
"""


def test_values_that_change_only_with_the_grad_mode_add_no_recompile():
    """Measured on torch 2.13: two graphs, the one recompile on ``GLOBAL_STATE changed: grad_mode``
    (its guard fails first); the same calls in one grad mode recompile on ``targets``."""
    assert not [d for d in check(GRAD_MODES) if d.code == "DYN206"]
    same_mode = GRAD_MODES.replace("    with torch.no_grad():\n", "    if True:\n")
    assert [d.message.split("`")[1] for d in check(same_mode) if d.code == "DYN206"] == ["targets"]
