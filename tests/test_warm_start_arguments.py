"""A value carried from one iteration of a calling loop to the next (a warm start: ``prev = None``
before the loop, ``f(x, prev)`` then ``prev = out[...]`` in it, or a state the compiled function returns
itself, ``out, state = f(x, state)``) is ``None`` at the first call and a tensor at the next (DYN206),
checked against Dynamo.

Measured on torch 2.13 (``backend="eager"``): the function reads the argument, so the first call guards
on its being ``None`` and the second recompiles.  When the loop rebinds the name before the call, every
call passes a tensor and nothing recompiles."""
from __future__ import annotations

import textwrap

from conftest import requires_torch
from helpers import check, dynamo_recompile_log, recompiles_of_script

CASES = """
    import torch


    @torch.compile(backend="eager")
    def refine(x, init):
        if init is None:
            return x * 2
        return x + init


    @torch.compile(backend="eager")
    def rebound_first(x, init):
        if init is None:
            return x * 2
        return x + init


    @torch.compile(backend="eager")
    def stream_step(chunk, state=None):
        if state is None:
            state = chunk.new_zeros(chunk.shape[0], 2)
        buf = torch.cat([state, chunk], dim=-1)
        return buf.sum(-1, keepdim=True) * chunk, buf[:, -2:]


    def run_refine():
        prev = None
        for _ in range(3):
            out = refine(torch.randn(4, 4), prev)
            prev = out[:, ::1]


    def run_rebound_first():
        prev = None
        base = torch.randn(4, 4)
        for _ in range(3):
            prev = base[:, ::1]
            rebound_first(torch.randn(4, 4), prev)


    def run_stream():
        state = None
        stream = torch.randn(2, 12)
        for i in range(3):
            out, state = stream_step(stream[:, 4 * i:4 * i + 4], state)


    RUNS = [run_refine, run_rebound_first, run_stream]
"""


def test_dyn206_reports_a_warm_start_carried_across_iterations():
    code = textwrap.dedent(CASES)
    lines = code.lstrip("\n").splitlines()
    reported = {lines[d.line - 1].split("def ")[1].split("(")[0] for d in check(code) if d.code == "DYN206"}
    assert reported == {"refine", "stream_step"}


@requires_torch
def test_the_cases_under_dynamo():
    namespace: dict = {}
    with dynamo_recompile_log() as messages:
        exec(compile(textwrap.dedent(CASES), "<warm>", "exec"), namespace)
        for run in namespace["RUNS"]:
            run()
    recompiled = {m.split("Recompiling function")[1].split()[0] for m in messages}
    assert recompiled == {"refine", "stream_step"}


# the same loop in a script's own statements
SCRIPT = """\
import torch


def step(x, prev=None):
    if prev is None:
        return x * 2
    return x + prev


if __name__ == "__main__":
    fn = torch.compile(step, backend="eager")
    prev = None
    for i in range(3):
        y = fn(torch.randn(4), prev)
        prev = torch.sigmoid(y)
"""


def test_a_script_s_own_loop() -> None:
    assert [d.line for d in check(SCRIPT) if d.code == "DYN206"] == [4]


@requires_torch
def test_a_script_s_own_loop_under_dynamo(tmp_path) -> None:
    messages = recompiles_of_script(tmp_path, "warm", SCRIPT)
    assert len(messages) == 1 and "prev" in messages[0], messages
