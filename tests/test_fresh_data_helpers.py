"""DYN204 on a data-dependent size used after its graph break, where the script's calls hand the compiled
function data that a helper of the script draws afresh at each call (``fn(synthetic(40))`` with ``def
synthetic(n): return torch.randn(n)``): the size changes with the data, so the resumed frame, guarded on it,
recompiles (measured on torch 2.13).  A helper that returns data it did not draw (a fixed tensor) changes
nothing."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_script

SCRIPT = """\
import torch

FIXED = torch.randn(40)


def synthetic(n):
    return torch.randn(n) * 2.0


def fixed(n):
    return FIXED[:n]


def events(x):
    starts = torch.nonzero(x > 1.0).flatten()
    return starts * 2


if __name__ == "__main__":
    fn = torch.compile(events, backend="eager")
    torch.manual_seed(0)
    for _ in range(3):
        fn(synthetic(40))
"""
CASES = {"drawn-afresh": (SCRIPT, [15]), "a-fixed-tensor": (SCRIPT.replace("fn(synthetic(40))", "fn(fixed(40))"), [])}


@pytest.mark.parametrize("name", sorted(CASES))
def test_check(name: str) -> None:
    code, lines = CASES[name]
    assert [d.line for d in check(code) if d.code == "DYN204"] == lines


@requires_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamo(name: str, tmp_path) -> None:
    code, lines = CASES[name]
    messages = recompiles_of_script(tmp_path, name.replace("-", "_"), code)
    assert bool(messages) == bool(lines), messages
