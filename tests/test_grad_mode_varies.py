"""DYN208: a compiled entry point run with grad mode on and off.

Measured on torch 2.13 (``backend="eager"``): a compiled function called with grad mode on, then under
``torch.no_grad()`` or ``torch.inference_mode()``, recompiles with ``GLOBAL_STATE changed: grad_mode``,
even when it reads no parameter; each mode then keeps its graph.
"""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, dynamo_recompile_log

PROGRAM = """
    import torch

    lin = torch.nn.Linear(3, 3)


    @torch.compile
    def head(x):
        return lin(x).relu()


    def fit(x):
        return head(x)


    def main():
        for _ in range(2):
            fit(torch.randn(2, 3))
        with torch.no_grad():
            for _ in range(2):
                head(torch.randn(2, 3))
"""


SCOPED = PROGRAM + """

    def evaluate(x, train):
        with torch.set_grad_enabled(train):
            return (x * x).sum()
"""


def _flagged(code: str) -> list[int]:
    return [d.line for d in check(code) if d.code == "DYN208"]


def test_an_entry_point_run_in_both_grad_modes_is_reported_on_its_def():
    assert _flagged(PROGRAM) == [7]
    message = next(d.message for d in check(PROGRAM) if d.code == "DYN208")
    assert "`head(x)` in `fit`" in message and "`head(torch.randn(2, 3))` in `main`, under no-grad" in message


@pytest.mark.parametrize("old, new", [
    # every call under no-grad
    ("            fit(torch.randn(2, 3))", "            pass"),
    # the caller on the grad side is itself called under no-grad
    ("        for _ in range(2):\n            fit(", "        with torch.no_grad():\n            fit("),
    # the module changes the grad mode in a way the calls do not show
    ("    def main():\n", "    def main():\n        torch.set_grad_enabled(False)\n"),
    # the call on the grad side runs in the mode a flag sets for its block
    ("            fit(torch.randn(2, 3))",
     "            with torch.set_grad_enabled(flag):\n                fit(torch.randn(2, 3))"),
])
def test_no_finding_when_the_grad_mode_of_a_call_is_not_known_to_differ(old, new):
    assert old in PROGRAM
    assert _flagged(PROGRAM.replace(old, new)) == []


def test_a_block_that_sets_the_grad_mode_elsewhere_changes_no_other_call():
    """``with torch.set_grad_enabled(train):`` restores the mode after its block: the calls outside it keep
    theirs (a statement ``torch.set_grad_enabled(False)`` would not)."""
    assert _flagged(SCOPED) == [7]


def test_inference_mode_and_a_decorated_caller_turn_grad_mode_off():
    inference = PROGRAM.replace("with torch.no_grad():", "with torch.inference_mode():")
    assert _flagged(inference) == [7]
    decorated = """
        import torch


        @torch.compile
        def head(x):
            return x.sin()


        @torch.no_grad()
        def evaluate(x):
            return head(x)


        head(torch.randn(3))
        evaluate(torch.randn(3))
    """
    assert _flagged(decorated) == [5]


@requires_torch
@pytest.mark.parametrize("program", [PROGRAM, SCOPED], ids=["calls", "and-a-block-setting-the-mode"])
def test_dynamo_recompiles_on_the_grad_mode(program):
    import textwrap

    namespace: dict = {}
    source = textwrap.dedent(program).replace("@torch.compile", "@torch.compile(backend='eager')")
    with dynamo_recompile_log() as failures:
        exec(compile(source, "grad_modes.py", "exec"), namespace)
        namespace["main"]()
    assert len(failures) == 1 and "GLOBAL_STATE changed: grad_mode" in failures[0]
