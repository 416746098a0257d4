"""A 0-d integer tensor passed to a compiled entry point and used as an index (DYN206), checked
against Dynamo.

Measured on torch 2.13 (``backend="eager"``): Dynamo reads the value of a 0-d tensor that entered the
frame where it indexes a tensor (``x[i]``), or sizes a tensor the code iterates over (``for e in
x.new_ones(i)``), and guards on it (``i.item() == 1``): every new value recompiles, with no automatic
dynamic.  So does a copy of it (``copy.deepcopy(i)``, across the break the copy makes) carried in a
list to a helper that indexes with it.  Arithmetic with it (``x * i``) installs no such guard, nor does
an index in a part that Dynamo runs eagerly (after a graph break inside a loop), nor the same value
at every call."""
from __future__ import annotations

import textwrap

from conftest import requires_torch
from helpers import check, dynamo_recompile_log, recompiles_of_run

CASES = """
    import copy

    import torch


    def pick(h, p):
        return h + h[p[1]]


    def picked(x, i):
        return x + x[i]


    def counted(x, i):
        for e in x.new_ones(i):
            x = x + e
        return x


    def carried(x, i):
        v = copy.deepcopy(i)
        p = [x, v]
        return pick(x, p)


    def scaled(x, i):
        return x * i


    def late(x, i):
        for _ in range(2):
            torch._dynamo.graph_break()
            x = x + 1
        return x + x[i]


    def fixed(x, i):
        return x + x[i]


    compiled_picked = torch.compile(picked, backend="eager")
    compiled_counted = torch.compile(counted, backend="eager")
    compiled_carried = torch.compile(carried, backend="eager")
    compiled_scaled = torch.compile(scaled, backend="eager")
    compiled_late = torch.compile(late, backend="eager")
    compiled_fixed = torch.compile(fixed, backend="eager")


    def run():
        for n in range(3):
            compiled_picked(torch.randn(8), torch.tensor(n + 1))
            compiled_counted(torch.randn(8), torch.tensor(n + 1))
            compiled_carried(torch.randn(8), torch.tensor(n + 1))
            compiled_scaled(torch.randn(8), torch.tensor(n + 1))
            compiled_late(torch.randn(8), torch.tensor(n + 1))
            compiled_fixed(torch.randn(8), torch.tensor(2))
"""

RECOMPILED = {"picked", "counted", "carried"}


def test_dyn206_reports_the_entry_points_that_index_with_a_changing_0d_tensor():
    lines = textwrap.dedent(CASES).lstrip("\n").splitlines()
    found = [d for d in check(CASES) if d.code == "DYN206"]
    assert {lines[d.line - 1].split("def ")[1].split("(")[0] for d in found} == RECOMPILED
    assert all("uses the 0-d tensor as an index" in d.message for d in found)


@requires_torch
def test_the_cases_under_dynamo():
    messages = recompiles_of_run(CASES, "index_tensors")
    recompiled = {m.split("Recompiling function")[1].split()[0] for m in messages}
    assert {name.split("torch_dynamo_resume_in_")[-1].rsplit("_at_", 1)[0] for name in recompiled} == RECOMPILED


TIMESTEPS = """
import torch

ALPHAS = torch.linspace(1.0, 0.01, 1000)


def step(x, t):
    return x * ALPHAS[t].sqrt()


def main(x):
    f = torch.compile(step, backend="eager")
    for t in torch.linspace(999, 0, 4).long():
        x = f(x, t)
    return x
"""
"""A sampler's loop over the timesteps a torch factory makes hands the compiled step a 0-d tensor of another
number at each iteration, at module level as in a function: indexed with, it recompiles at every step."""


def test_a_loop_over_a_tensor_of_timesteps_is_reported():
    script = TIMESTEPS.replace("def main(x):\n", "if __name__ == \"__main__\":\n    x = torch.randn(3)\n")
    script = script.replace("    return x\n", "")
    for code in (TIMESTEPS, script):
        found = [d for d in check(code) if d.code == "DYN206"]
        assert [d.line for d in found] == [6] and "uses the 0-d tensor as an index" in found[0].message, code


@requires_torch
def test_a_loop_over_a_tensor_of_timesteps_recompiles_at_every_step():
    namespace: dict = {}
    with dynamo_recompile_log() as messages:
        exec(compile(TIMESTEPS, "<timesteps>", "exec"), namespace)
        namespace["main"](torch_randn(3))
    assert len(messages) == 3 and all("t.item() ==" in m for m in messages), messages


def torch_randn(*size: int):
    import torch

    return torch.randn(*size)
