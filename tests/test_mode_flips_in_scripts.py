"""DYN205 on a module a script calls in both modes from its own statements (``m(x)``, ``mod.eval()``, ``m(x)``
in its ``__main__`` block): ``forward`` reads ``self.training``, so Dynamo compiles a second graph after the
switch (measured on torch 2.13: one recompile, on ``training``); without the switch, or when the call after it
is of the plain module rather than of what ``torch.compile`` returned, they compile one; a switch whose mode a
loop computes (``fe.train(epoch == 0)``) is replayed, pass by pass. DYN208 on a compiled
function a script calls with grad mode on and under ``with torch.no_grad():`` at module level or after a
``torch.set_grad_enabled(False)`` statement of the script (one recompile, ``GLOBAL_STATE changed:
grad_mode``)."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, recompiles_of_script, script_case_tests

SCRIPT = """\
import torch
import torch.nn as nn


class RunningNorm(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.register_buffer("mean", torch.zeros(d))

    def forward(self, x):
        if self.training:
            self.mean.mul_(0.9).add_(0.1 * x.mean(0))
        return x - self.mean


if __name__ == "__main__":
    mod = RunningNorm()
    m = torch.compile(mod, backend="eager")
    m(torch.randn(2, 8))
    mod.eval()
    m(torch.randn(2, 8))
"""
#: script -> (DYN205 lines, recompiles)
CASES = {"flipped": (SCRIPT, {10}, 1), "one-mode": (SCRIPT.replace("    mod.eval()\n", ""), set(), 0),
         # evaluated through the plain module, which runs eagerly: the compiled one sees one mode
         "evaluated-eagerly": (SCRIPT.replace("    mod.eval()\n    m(", "    mod.eval()\n    mod("),
                               set(), 0)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_check(name: str) -> None:
    code, lines, _ = CASES[name]
    found = [d for d in check(code) if d.code == "DYN205"]
    assert {d.line for d in found} == lines
    assert all("`mod.eval()` at module level" in d.message for d in found)


@requires_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamo(name: str, tmp_path) -> None:
    code, _, recompiles = CASES[name]
    messages = recompiles_of_script(tmp_path, name, code)
    assert len(messages) == recompiles, messages
    assert all("training" in m for m in messages)


GRAD = """\
import torch


def step(x, w):
    return (x @ w).relu().sum()


if __name__ == "__main__":
    f = torch.compile(step, backend="eager")
    w = torch.randn(4, 4, requires_grad=True)
    f(torch.randn(2, 4), w)
    with torch.no_grad():
        f(torch.randn(2, 4), w)
"""


#: grad mode switched by `torch.set_grad_enabled(...)` statements of the script, known at each of its calls
SET_GRAD = GRAD.replace("    with torch.no_grad():\n        f(torch.randn(2, 4), w)\n",
                        "    torch.set_grad_enabled(False)\n    f(torch.randn(2, 4), w)\n"
                        "    torch.set_grad_enabled(True)\n")
GRAD_CASES = {"no-grad-block": (GRAD, [(4, "DYN208")], 1), "set-grad-enabled": (SET_GRAD, [(4, "DYN208")], 1),
              "set-grad-enabled-before-every-call": (SET_GRAD.replace(
                  "    f(torch.randn(2, 4), w)\n    torch.set_grad_enabled(False)\n",
                  "    torch.set_grad_enabled(False)\n    f(torch.randn(2, 4), w)\n"), [], 0)}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grad_mode(name: str) -> None:
    code, found, _ = GRAD_CASES[name]
    assert [(d.line, d.code) for d in check(code) if d.code.startswith("DYN2")] == found


@requires_torch
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_dynamo_grad_mode(name: str, tmp_path) -> None:
    code, _, recompiles = GRAD_CASES[name]
    messages = recompiles_of_script(tmp_path, name.replace("-", "_"), code)
    assert len(messages) == recompiles and all("grad_mode" in m for m in messages), messages


BOTH = SCRIPT.replace("    mod.eval()\n    m(torch.randn(2, 8))\n",
                      "    mod.eval()\n    with torch.no_grad():\n        m(torch.randn(2, 8))\n")


def test_check_mode_and_grad_mode_switched_at_one_call() -> None:
    """``.eval()`` and ``torch.no_grad()`` switched at one call: one recompile for both, which Dynamo names
    after the grad mode; DYN208 reports it, and DYN205 does not report it again."""
    assert BOTH != SCRIPT
    assert [d.code for d in check(BOTH) if d.code.startswith("DYN2")] == ["DYN208"]


@requires_torch
def test_dynamo_mode_and_grad_mode_switched_at_one_call(tmp_path) -> None:
    messages = recompiles_of_script(tmp_path, "both", BOTH)
    assert len(messages) == 1 and "grad_mode" in messages[0], messages


# a switch whose mode the loop computes (`fe.train(epoch == 0)`): training on one pass, evaluation on the next
MODE_COMPUTED = """\
import torch
import torch.nn as nn


class Frontend(nn.Module):
    def forward(self, wav):
        if self.training:
            wav = wav + 1e-5 * torch.randn_like(wav)
        return wav.abs().log1p()


fe = Frontend()
compiled = torch.compile(fe, backend="eager")

if __name__ == "__main__":
    for epoch in range(2):
        fe.train(epoch == {first})
        compiled(torch.randn(2, 100))
"""

test_check_computed, test_dynamo_computed = script_case_tests({
    "mode-computed": (MODE_COMPUTED.format(first="0"), [6], 1),
    "mode-computed-alike": (MODE_COMPUTED.format(first="epoch"), [], 0),
}, "DYN205")
