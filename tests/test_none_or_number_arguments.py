"""A compiled function called with ``None`` and with numbers for one parameter (``smoothing=None``, then
``0.05``): Dynamo guards on ``s is None`` and then on the number, so each new kind of value recompiles
(measured on torch 2.13: two recompiles over ``[None, 0.05, 0.0]``); so does a script's ``f(x, None)`` then
``f(x, torch.rand(8))`` at module level (DYN206)."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_script

LOOP = """\
import torch


def compute_loss(x, smoothing=None):
    eps = 0.1
    if smoothing is not None:
        eps = smoothing
    return x.log_softmax(-1).mean() * (1 - eps)


if __name__ == "__main__":
    f = torch.compile(compute_loss, backend="eager")
    x = torch.randn(4, 8)
    for smoothing in [None, 0.05, 0.0]:
        f(x, smoothing)
"""

CALLS = """\
import torch


def weighted(x, weight=None):
    if weight is not None:
        x = x * weight
    return x.mean()


if __name__ == "__main__":
    f = torch.compile(weighted, backend="eager")
    x = torch.randn(4, 8)
    f(x, None)
    f(x, torch.rand(8))
"""

#: script -> (line of the DYN206 finding, recompiles Dynamo logs)
CASES = {"loop": (LOOP, 4, 2), "calls": (CALLS, 4, 1)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_check(name: str) -> None:
    code, line, _ = CASES[name]
    assert [(d.line, d.code) for d in check(code) if d.code.startswith("DYN2")] == [(line, "DYN206")]


def test_one_kind_of_value_is_not_reported() -> None:
    assert not [d for d in check(LOOP.replace("[None, 0.05, 0.0]", "[None, None]")) if d.code == "DYN206"]


@requires_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamo(name: str, tmp_path) -> None:
    code, _, recompiles = CASES[name]
    messages = recompiles_of_script(tmp_path, name, code)
    assert len(messages) == recompiles, messages
    assert "is None" in messages[0]
