"""A change that comes with a recompile Dynamo makes anyway adds none of its own (DYN205), checked
against Dynamo.

Measured on torch 2.13 (``backend="eager"``): when a float attribute of a compiled ``nn.Module`` first
changes at the call where a tensor argument first changes size, Dynamo recompiles once, names only the
size, and automatic dynamic makes both dynamic: later values recompile nothing.  The same float with
sizes that stay, a float whose first change comes at another call than the size's, or an int
attribute (static on an ``nn.Module``: each new value recompiles) each recompile on the attribute."""
from __future__ import annotations

import textwrap

from conftest import requires_torch
from helpers import check, dynamo_recompile_log, recompiles_of_run

CASES = """
    import torch
    import torch.nn as nn


    class Together(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.together = 1.0

        def set_together(self, value):
            self.together = value

        def forward(self, x):
            return self.lin(x) * self.together


    class Alone(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.alone = 1.0

        def set_alone(self, value):
            self.alone = value

        def forward(self, x):
            return self.lin(x) * self.alone


    class Late(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.late = 1.0

        def set_late(self, value):
            self.late = value

        def forward(self, x):
            return self.lin(x) * self.late


    class Counted(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.counted = 1

        def set_counted(self, value):
            self.counted = value

        def forward(self, x):
            return self.lin(x) * self.counted


    def run_together():
        model = Together()
        compiled = torch.compile(model, backend="eager")
        for step in range(4):
            model.set_together(1.0 - 0.25 * step)
            seq = (8, 12)[step % 2]
            compiled(torch.randn(2, seq, 4))


    def run_alone():
        model = Alone()
        compiled = torch.compile(model, backend="eager")
        for step in range(4):
            model.set_alone(1.0 - 0.25 * step)
            compiled(torch.randn(2, 8, 4))


    def run_late():
        model = Late()
        compiled = torch.compile(model, backend="eager")
        for step in range(4):
            model.set_late(1.0 - 0.25 * step)
            seq = 8 if step < 2 else 12
            compiled(torch.randn(2, seq, 4))


    def run_counted():
        model = Counted()
        compiled = torch.compile(model, backend="eager")
        for step in range(4):
            model.set_counted(step + 1)
            seq = (8, 12)[step % 2]
            compiled(torch.randn(2, seq, 4))


    RUNS = [run_together, run_alone, run_late, run_counted]
"""

RECOMPILED_ON_ATTRIBUTE = {"alone", "late", "counted"}
"""The attributes a recompile names over the runs above (``together`` changes only with the size)."""


def test_dyn205_stays_silent_on_a_float_that_changes_only_with_a_size():
    reported = {d.message.split("`self.")[1].split("`")[0] for d in check(CASES) if d.code == "DYN205"}
    assert reported == RECOMPILED_ON_ATTRIBUTE


@requires_torch
def test_the_cases_under_dynamo():
    namespace: dict = {}
    with dynamo_recompile_log() as messages:
        exec(compile(textwrap.dedent(CASES), "<masked>", "exec"), namespace)
        for run in namespace["RUNS"]:
            run()
    named = {attr for attr in ("together", "alone", "late", "counted")
             if any(f"self.{attr} ==" in m or f".{attr} ==" in m for m in messages)}
    assert named == RECOMPILED_ON_ATTRIBUTE


STATS = """
    import torch
    import torch.nn as nn


    class Router(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.stats = {}

        def forward(self, x):
            y = self.lin(x)
            self.stats["frac"] = y.shape[1] / 16
            return y


    def run():
        compiled = torch.compile(Router(), backend="eager")
        for step in range(4):
            seq = SEQ
            compiled(torch.randn(2, seq, 4))
"""
"""A dict on ``self`` that compiled code stores one literal key into: it gains its key at the first call,
so the second fails the guard on its emptiness (``not self.stats``) and recompiles, unless that call
recompiles anyway because the input's size changed (then the recompile names only the size)."""

STATS_SIZES = {"(8, 12)[step % 2]": False, "8": True}
"""The size expression of the loop -> whether the dict's growth recompiles on its own (DYN203)."""


def test_dyn203_stays_silent_on_a_dict_filled_at_a_call_the_size_recompiles_anyway():
    for size, reported in STATS_SIZES.items():
        found = [d for d in check(STATS.replace("SEQ", size)) if d.code == "DYN203"]
        assert bool(found) == reported, size


@requires_torch
def test_the_dict_cases_under_dynamo():
    for size, reported in STATS_SIZES.items():
        messages = recompiles_of_run(STATS.replace("SEQ", size), "stats")
        assert any("self.stats" in m for m in messages) == reported, size
