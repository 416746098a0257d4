"""The loop of a script's ``if __name__ == "__main__":`` block is replayed as a function's loop is (DYN206):
a compiled function called there with a number that changes from one iteration to the next recompiles
(measured on torch 2.13: the guard ``scale == 1.0`` fails on the second call)."""
from __future__ import annotations

from conftest import requires_torch
from helpers import check, recompiles_of_script

SCRIPT = """\
import torch


def f(x, scale=1.0):
    return x * scale


if __name__ == "__main__":
    cf = torch.compile(f, backend="eager")
    for s in SCALES:
        cf(torch.randn(3), s)
"""


def _script(scales: str) -> str:
    return SCRIPT.replace("SCALES", scales)


def test_the_loop_at_module_level_is_replayed() -> None:
    found = [d for d in check(_script("(1.0, 2.0, 3.0)")) if d.code == "DYN206"]
    assert [(d.line, d.code) for d in found] == [(4, "DYN206")]
    assert "`1.0`, `2.0`, `3.0` in turn" in found[0].message and "at module level" in found[0].message


def test_one_value_repeated_recompiles_nothing() -> None:
    assert not [d for d in check(_script("(2.0, 2.0)")) if d.code == "DYN206"]


@requires_torch
def test_dynamo_recompiles_on_the_second_value(tmp_path) -> None:
    for scales, recompiles in (("(1.0, 2.0, 3.0)", 1), ("(2.0, 2.0)", 0)):
        messages = recompiles_of_script(tmp_path, f"script_{recompiles}", _script(scales))
        assert len(messages) == recompiles, messages
        assert all("scale == 1.0" in m for m in messages)
