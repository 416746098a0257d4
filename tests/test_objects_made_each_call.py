"""DYN203 and objects compiled code builds itself: ``t = Timer()`` inside the compiled function is a new
object each call, so what ``with t:`` changes on it (``self.entered += 1`` in ``__enter__``) no later call's
guard reads, and nothing recompiles (measured on torch 2.13)."""
from __future__ import annotations

from conftest import requires_torch
from helpers import check, recompiles_of_script

TIMER = """\
import torch


class Timer:
    def __init__(self):
        self.entered = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, *exc):
        return False


def timed(x):
    t = Timer()
    with t:
        y = x + 1
    return y * t.entered


if __name__ == "__main__":
    f = torch.compile(timed, backend="eager")
    a = torch.randn(4, 3)
    for _ in range(3):
        f(a)
"""


def test_check() -> None:
    assert [d for d in check(TIMER) if d.code == "DYN203"] == []


@requires_torch
def test_dynamo(tmp_path) -> None:
    assert recompiles_of_script(tmp_path, "timer", TIMER) == []
