"""DYN208: a compiled entry point run with grad mode on and off.

Measured on torch 2.13 (``backend="eager"``): a compiled function called with grad mode on, then under
``torch.no_grad()`` or ``torch.inference_mode()``, recompiles with ``GLOBAL_STATE changed: grad_mode``,
even when it reads no parameter; each mode then keeps its graph.
"""
from __future__ import annotations

import pytest

from conftest import requires_torch
from helpers import check, dynamo_recompile_log, recompiled_frames, recompiles_of_run

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



SHARED = """
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            y = self.lin(x)
            print("norm")
            return y.relu()


    def loss_fn(model, x):
        return model(x).pow(2).mean()


    @torch.no_grad()
    def evaluate(model, x):
        return model(x).argmax(-1)


    def run():
        torch.manual_seed(0)
        net = Net()
        train = torch.compile(loss_fn, backend="eager")
        test = torch.compile(evaluate, backend="eager")
        train(net, torch.ones(2, 4)).backward()
        test(net, torch.ones(2, 4))


    if __name__ == "__main__":
        run()
"""
"""``Net.forward`` breaks: Dynamo runs it as a frame of its own from the compiled loss (grad mode on) and
from the compiled evaluation (decorated with ``torch.no_grad()``), whose graphs are kept on its code, so the
second mode recompiles it."""

#: the same with the break inside a loop: Dynamo runs the frame eagerly, with no graph to recompile
LOOPED = SHARED.replace("""            y = self.lin(x)
            print("norm")""", """            y = x
            for _ in range(2):
                y = self.lin(y)
                print("step")""")


def test_a_breaking_function_two_entry_points_run_in_both_modes_is_reported_on_its_def():
    found = [d for d in check(SHARED) if d.code == "DYN208"]
    assert [d.line for d in found] == [10]
    message = found[0].message
    assert "`loss_fn` runs it with grad mode on" in message and "`evaluate` with it off" in message
    assert not [d for d in check(LOOPED) if d.code == "DYN208"]


def test_a_model_compiled_at_once_under_no_grad_counts_as_an_entry_point_called_there():
    at_once = 'with torch.no_grad():\n            torch.compile(net, backend="eager")(torch.ones(2, 4))'
    program = SHARED.replace("test(net, torch.ones(2, 4))", at_once)
    assert [d.line for d in check(program) if d.code == "DYN208"] == [10]


@requires_torch
@pytest.mark.parametrize("program, recompiled", [(SHARED, True), (LOOPED, False)], ids=["shared", "looped"])
def test_dynamo_recompiles_the_shared_frame_on_the_grad_mode(program, recompiled):
    failures = recompiles_of_run(program, "shared_frames")
    assert (("forward", False) in recompiled_frames(failures)) == recompiled, failures
    assert all("grad_mode" in f for f in failures if "function forward" in f)


RESTORED = """
    import torch

    lin = torch.nn.Linear(3, 3)


    @torch.compile(backend="eager")
    def head(x):
        return lin(x).relu()


    def frozen(x):
        torch.set_grad_enabled(False)
        y = head(x)
        torch.set_grad_enabled(True)
        return y


    def run():
        head(torch.ones(2, 3))
        with torch.no_grad():
            head(torch.ones(2, 3))
            with torch.enable_grad():
                head(torch.ones(2, 3))


    if __name__ == "__main__":
        run()
"""
"""``frozen`` turns grad mode off and back on around its own call, which runs under no-grad; the mode outside
it is as it was, so ``main``'s calls are known: on, off, and on again inside ``torch.enable_grad()``."""


def test_a_function_that_restores_the_grad_mode_leaves_the_other_calls_known():
    found = [d for d in check(RESTORED) if d.code == "DYN208"]
    assert [d.line for d in found] == [7]
    assert "in `run`" in found[0].message
    never_restored = RESTORED.replace("        torch.set_grad_enabled(True)\n", "")
    assert not [d for d in check(never_restored) if d.code == "DYN208"]


def test_enable_grad_inside_no_grad_runs_with_grad_mode_on():
    only_nested = RESTORED.replace("        head(torch.ones(2, 3))\n        with torch.no_grad():",
                                   "        with torch.no_grad():")
    assert [d.line for d in check(only_nested) if d.code == "DYN208"] == [7]


@requires_torch
def test_dynamo_recompiles_under_enable_grad_inside_no_grad():
    failures = recompiles_of_run(RESTORED, "restored")
    assert len(failures) == 1 and "grad_mode" in failures[0]


NESTED = SHARED.replace("    class Net(nn.Module):", "    class Block(nn.Module):").replace(
    "\n\n    def loss_fn", '''


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x)


    def loss_fn''')
"""``Net.forward`` calls a block whose ``forward`` breaks: ``Net.forward`` is a frame of its own from both
entry points (the outermost function they share that reaches a break), and recompiles on the grad mode.  Only
it is reported: what it calls may run inside it in one mode only (not here: the block's frame recompiles
too)."""


def test_the_outermost_shared_function_that_reaches_a_break_is_reported():
    found = [(d.line, d.message.split("`")[1]) for d in check(NESTED) if d.code == "DYN208"]
    assert found == [(22, "forward")]


@requires_torch
def test_dynamo_recompiles_the_outermost_shared_frame_on_the_grad_mode():
    failures = recompiles_of_run(NESTED, "nested_frames")
    # (the text has a leading blank line that `check` leaves out: Net.forward is at line 23 here)
    at = "function forward in <nested_frames>:23"
    assert any(at in f and "grad_mode" in f for f in failures), failures
