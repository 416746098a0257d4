"""DYN206 compares what the calls of a compiled function pass to its keyword-only parameters as it compares
the others: ``f(x, alpha=1.0)`` then ``f(x, alpha=2.5)`` recompiles on ``alpha``, and a call that passes
``flip=True`` where the others leave the default ``False`` recompiles on ``flip`` (measured on torch 2.13)."""
from __future__ import annotations

from conftest import requires_torch
from helpers import check, recompiles_of_script

SCRIPT = """\
import torch


def scaled(x, *, alpha=1.0, flip=False):
    y = x * alpha
    if flip:
        y = -y
    return y


if __name__ == "__main__":
    f = torch.compile(scaled, backend="eager")
    a = torch.randn(3)
    f(a, alpha=1.0)
    f(a, alpha=2.5)
    f(a, alpha=2.5, flip=True)
"""


def test_check() -> None:
    found = [d for d in check(SCRIPT) if d.code == "DYN206"]
    assert [d.line for d in found] == [4]
    assert "`alpha`, `flip` vary between calls" in found[0].message


@requires_torch
def test_dynamo(tmp_path) -> None:
    messages = recompiles_of_script(tmp_path, "kwonly", SCRIPT)
    assert len(messages) == 2, messages
    assert any("alpha" in m for m in messages) and any("flip" in m for m in messages)
