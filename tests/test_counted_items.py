"""DYN203 on a Python number kept in a dict or list on ``self`` that compiled code changes in place
(``self.seen["calls"] += 1``, ``self.counts[0] += 1``).  Dynamo guards on the item's value
(``self.seen['calls'] == 0``): an int recompiles on every call, a float once, and an item that becomes a tensor
(``self.totals["correct"] += (y > 0).sum()``) once; a dict of tensors changed in place is not guarded by value
(measured on torch 2.13)."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_run

CODE = """
    import torch
    import torch.nn as nn


    class Tracked(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.state = INIT

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.lin(x)
            UPDATE
            return y


    def run():
        m = torch.compile(Tracked(), backend="eager")
        for _ in range(4):
            m(torch.randn(2, 4))
"""
#: (what `__init__` keeps, what forward changes) -> (the words of the finding or None, Dynamo's graphs)
VARIANTS = {
    ('{"calls": 0}', 'self.state["calls"] += 1'): ("on every call", 4),
    ("[0, 0]", "self.state[0] += 1"): ("on every call", 4),
    ('{"t": 0.0}', 'self.state["t"] += 0.5'): ("once when it first changes", 2),
    ('{"correct": 0}', 'self.state["correct"] += (y > 0).sum()'): ("once, at the call after the first", 2),
    ('{"sum": torch.zeros(4)}', 'self.state["sum"] += y.detach().sum(0)'): (None, 1),
}


def _code(init: str, update: str) -> str:
    return CODE.replace("INIT", init).replace("UPDATE", update)


@pytest.mark.parametrize("init, update", list(VARIANTS))
def test_check(init: str, update: str) -> None:
    words, _ = VARIANTS[init, update]
    found = [d for d in check(_code(init, update)) if d.code == "DYN203"]
    if words is None:
        assert not found
    else:
        assert len(found) == 1 and words in found[0].message and "`self.state` holds Python numbers" in found[0].message


@requires_torch
@pytest.mark.parametrize("init, update", list(VARIANTS))
def test_dynamo(init: str, update: str) -> None:
    messages = recompiles_of_run(_code(init, update), "counted-items")
    assert len(messages) + 1 == VARIANTS[init, update][1]
