"""DYN203 on a class attribute that compiled code changes through the class (``Counter.calls += 1``,
``type(self).seen += 1``, ``self.__class__.n += 1``, ``Box.n = Box.n + 1``, ``Registry.names.append(...)``),
and DYN201 on a global iterator that compiled code advances (``next(_ids)``).  Dynamo guards on the class
attribute (``G['Counter'].calls == 0``) and on the iterator's position (``___normalize_count_iter``), so the
function recompiles on every call; a float class attribute once (measured on torch 2.13).  A class attribute
only stored (``Box.last = 3``) or only read, and an iterator made inside the function, are no hazard."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_run

CODE = """
    import itertools

    import torch
    import torch.nn as nn


    class Counter:
        calls = 0
        total = 0.0
        names = []
        last = 0


    _ids = itertools.count()


    class Tagged(nn.Module):
        seen = 0

        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            BODY
            return self.lin(x)


    def run():
        m = torch.compile(Tagged(), backend="eager")
        for _ in range(3):
            m(torch.randn(2, 4))
"""
#: the statement forward runs -> (the code dynalint reports, whether Dynamo recompiles)
VARIANTS = {
    "Counter.calls += 1": ("DYN203", True),
    "type(self).seen += 1": ("DYN203", True),
    "self.__class__.seen += 1": ("DYN203", True),
    "Counter.calls = Counter.calls + 1": ("DYN203", True),
    "Counter.total += 0.5": ("DYN203", True),
    'Counter.names.append("lin")': ("DYN203", True),
    "x = x + next(_ids)": ("DYN201", True),
    "Counter.last = 3": (None, False),
    "x = x * Counter.calls": (None, False),
    "x = x + next(itertools.count())": (None, False),
}


def _code(body: str) -> str:
    return CODE.replace("BODY", body)


@pytest.mark.parametrize("body", list(VARIANTS))
def test_check(body: str) -> None:
    code, _ = VARIANTS[body]
    found = {d.code for d in check(_code(body)) if d.code.startswith("DYN2")}
    assert found == ({code} if code else set())


@requires_torch
@pytest.mark.parametrize("body", list(VARIANTS))
def test_dynamo(body: str) -> None:
    messages = recompiles_of_run(_code(body), "class-state")
    assert bool(messages) == VARIANTS[body][1]


def test_message_names_the_class() -> None:
    found = [d for d in check(_code("Counter.calls += 1")) if d.code == "DYN203"]
    assert len(found) == 1 and "`Counter.calls` is a Python class attribute" in found[0].message
    assert "on every call" in found[0].message
