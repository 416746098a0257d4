"""``async-assert`` keeps what the check guarded: an ``elif`` check runs only where the branches above
did not, and a formatted ``RuntimeError`` keeps its eager message."""
from __future__ import annotations

import textwrap

import pytest

from conftest import requires_torch
from dynalint.config.settings import Settings
from dynalint.engine.fixing import fix_source

ELIF_CHECK = """
    import torch

    @torch.compile
    def f(x, mode: str):
        if mode == "skip":
            pass
        elif (x < 0).any():  # no negatives
            raise RuntimeError("negative values")
        return x + 1
"""

FORMATTED = """
    import torch

    @torch.compile
    def f(x):
        total = x.abs().sum()
        if total == 0:
            raise RuntimeError(f"cannot normalise {x.shape[0]} zeros")
        return x / total
"""


def _fixed(source: str) -> str:
    result = fix_source(textwrap.dedent(source), "m.py", Settings(), unsafe=True)
    assert any(a.fixer == "async-assert" for a in result.applied), result.refused
    again = fix_source(result.source, "m.py", Settings(), unsafe=True)
    assert again.source == result.source
    return result.source


def _eager(source: str):
    """The module's ``f`` as written, not compiled."""
    namespace: dict = {}
    exec(compile(source.replace("@torch.compile\n", ""), "m.py", "exec"), namespace)
    return namespace["f"]


@requires_torch
def test_an_elif_check_becomes_the_else_of_the_branches_above():
    import torch

    fixed = _fixed(ELIF_CHECK)
    assert "    else:  # no negatives\n        torch._assert_async(" in fixed, fixed
    f = _eager(fixed)
    assert torch.equal(f(-torch.ones(2), "skip"), torch.zeros(2))  # the branch above ran: no check
    with pytest.raises(RuntimeError, match="negative values"):
        f(-torch.ones(2), "check")


@requires_torch
def test_a_formatted_runtime_error_keeps_its_eager_message():
    import torch

    fixed = _fixed(FORMATTED)
    assert 'torch._assert_async(~(total == 0), "cannot normalise ... zeros")' in fixed, fixed
    original, f = _eager(textwrap.dedent(FORMATTED)), _eager(fixed)
    with pytest.raises(RuntimeError) as before:
        original(torch.zeros(3))
    with pytest.raises(RuntimeError) as after:
        f(torch.zeros(3))
    assert str(after.value) == str(before.value) == "cannot normalise 3 zeros"
