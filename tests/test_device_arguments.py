"""A device passed to a compiled function as a string at one call and as ``torch.device`` at another.

Measured on torch 2.13 (``backend="eager"``): Dynamo guards on a device argument by equality
(``device == 'cpu'``, ``device == device(type='cpu')``), and a ``torch.device`` is never equal to a
string, so ``"cpu"`` then ``torch.device("cpu")`` recompiles, and so do two devices with another index;
the same device twice, or a device the function never reads, does not."""
from __future__ import annotations

import textwrap

import pytest

from conftest import requires_torch
from helpers import check, dynamo_recompile_log

CASES = """
    import torch


    @torch.compile(backend="eager")
    def moved(x, device):
        return x.to(device) + 1


    @torch.compile(backend="eager")
    def indexed(x, device):
        return x.to(device) * 2


    @torch.compile(backend="eager")
    def same(x, device):
        return x.to(device) + 1


    @torch.compile(backend="eager")
    def unread(x, device):
        return x + 1


    def run(x):
        moved(x, "cpu")
        moved(x, torch.device("cpu"))
        indexed(x, torch.device("cpu"))
        indexed(x, torch.device("cpu", 0))
        same(x, torch.device("cpu:0"))
        same(x, torch.device("cpu", 0))
        unread(x, "cpu")
        unread(x, torch.device("cpu"))
"""

PREDICTED = {"moved", "indexed"}


def test_a_string_against_a_device_and_two_devices_vary():
    found = [d for d in check(CASES) if d.code == "DYN206"]
    assert {name for name in ("moved", "indexed", "same", "unread")
            if any(f"specialises `{name}`" in d.message for d in found)} == PREDICTED
    moved = next(d.message for d in found if "`moved`" in d.message)
    assert "passes `'cpu'`" in moved and "passes `torch.device('cpu')`" in moved
    assert "each new value recompiles it" in moved


@requires_torch
def test_the_cases_under_dynamo():
    import torch

    namespace: dict = {}
    with dynamo_recompile_log() as messages:
        exec(compile(textwrap.dedent(CASES), "<devices>", "exec"), namespace)
        namespace["run"](torch.randn(2))
    assert {message.split("Recompiling function")[1].split()[0] for message in messages} == PREDICTED


@pytest.mark.parametrize("call", ['torch.device(kind)', 'torch.device("cpu:x")', 'torch.device("cpu:0", 1)',
                                  'torch.device("cpu", index=0)'])
def test_a_device_not_written_with_literals_is_not_compared(call):
    code = CASES.replace('moved(x, torch.device("cpu"))', f"moved(x, {call})").replace("def run(x):",
                                                                                     "def run(x, kind='cpu'):")
    assert not any("`moved`" in d.message for d in check(code) if d.code == "DYN206")
