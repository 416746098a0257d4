"""DYN204 stays silent on a number taken from tensor data inside a comprehension and used there
(``[x * t.item() for t in ts]``, ``[(int(a), int(c)) for a, c in zip(s, e)]``): the comprehension is a frame
of its own, whose loop Dynamo runs eagerly at the break, guarding on nothing; the same numbers taken in the
function's own statement are guarded and recompile once (measured on torch 2.13)."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_run

CODE = """\
import torch


def scaled(x, ts):
    return [x * t.item() for t in ts]


def spans(s, e):
    return [(int(a), int(c)) for a, c in zip(s, e)]


def pair(s, e):
    return {"a": int(s.sum()), "b": int(e.sum())}, s * 2


def run(name):
    compiled = {"scaled": torch.compile(scaled, backend="eager"),
                "spans": torch.compile(spans, backend="eager"),
                "pair": torch.compile(pair, backend="eager")}
    for i in range(3):
        s = torch.full((3,), float(i))
        compiled[name](s, s + 1)
"""

#: function -> its DYN204 lines, and the recompiles Dynamo logs over three calls with other data
CASES = {"scaled": (set(), 0), "spans": (set(), 0), "pair": ({13}, 2)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_check(name: str) -> None:
    start, end = {"scaled": (4, 6), "spans": (8, 10), "pair": (12, 14)}[name]
    found = {d.line for d in check(CODE) if d.code == "DYN204" and start <= d.line <= end}
    assert found == CASES[name][0]


@requires_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamo(name: str) -> None:
    messages = recompiles_of_run(CODE, name, name)
    assert len(messages) == CASES[name][1], messages


FIRST_ITERABLE = """\
import torch


def sizes(x, n):
    return [c.sum() * 2 for c in torch.split(x, n.tolist())]


def run():
    f = torch.compile(sizes, backend="eager")
    for k in range(3):
        f(torch.ones(6), torch.tensor([k + 1, 5 - k]))
"""


def test_check_first_iterable() -> None:
    """The first iterable of a comprehension runs in the enclosing frame: a number taken there and used
    there (the sizes of ``torch.split``) is guarded and recompiles when it changes."""
    assert [(d.line, d.code) for d in check(FIRST_ITERABLE) if d.code == "DYN204"] == [(5, "DYN204")]


@requires_torch
def test_dynamo_first_iterable() -> None:
    messages = recompiles_of_run(FIRST_ITERABLE, "first-iterable")
    assert len(messages) >= 1 and "___stack" in messages[0], messages
