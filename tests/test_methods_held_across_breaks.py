"""DYN204 when the value taken at a break is an argument of a method of a Python list, dict or string
(``losses.append(loss.item())``, ``"{:.3f}".format(loss.item())``): the frame resumed at the break holds
the bound method, a new object at every call, so Dynamo compiles it again at every call until the
recompile limit (measured on torch 2.13: 8 recompiles over 10 calls).  Bound to a name first, or handed
to a method of the checked code, the value is guarded alone and recompiles once."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_run

CODE = """\
import torch


class Head(torch.nn.Module):
    def helper(self, v):
        return v * 2

    def forward(self, x):
        loss = (x ** 2).mean()
        r = self.helper(loss.item())
        return loss * r


def appended(x, out):
    loss = (x ** 2).mean()
    out.append(loss.item() * 2)
    return loss * 2


def formatted(x):
    loss = (x ** 2).mean()
    text = "{:.3f}".format(loss.item())
    return loss * 2, text


def named_first(x, out):
    loss = (x ** 2).mean()
    value = loss.item()
    out.append(value)
    return loss * 2


def run(name):
    fn = Head() if name == "Head" else globals()[name]
    compiled = torch.compile(fn, backend="eager")
    for _ in range(10):
        args = (torch.randn(3),) if name in ("Head", "formatted") else (torch.randn(3), [])
        compiled(*args)
"""

#: function -> (line of the DYN204 finding, whether the resumed frame recompiles at every call)
CASES = {"Head": (10, False), "appended": (16, True), "formatted": (22, True), "named_first": (29, False)}


def _findings() -> dict[int, str]:
    return {d.line: d.message for d in check(CODE) if d.code == "DYN204"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_check(name: str) -> None:
    line, every_call = CASES[name]
    message = _findings()[line]
    assert ("compiles it again at every call" in message) is every_call
    assert ("recompiles once when it first changes" in message) is not every_call


@requires_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamo(name: str) -> None:
    messages = recompiles_of_run(CODE, name, name)
    _, every_call = CASES[name]
    assert len(messages) == (8 if every_call else 1), messages
    assert all(("deallocated" in m) is every_call for m in messages)
