"""Tensor methods that take arguments and that Dynamo breaks on whatever the arguments: ``resize_`` and
``resize_as_`` (of an input or of a tensor made in the graph) and ``apply_`` (its Python function cannot be
put in a graph). ``check`` reports each call and stays silent on a NumPy array's ``resize``, traced."""
from __future__ import annotations

import json

from conftest import requires_torch
from dynalint.rules.base import Example
from helpers import run, run_example_under_dynamo, write

CODE = """\
    import numpy as np
    import torch


    @torch.compile(backend="eager")
    def resized_input(x):
        x.resize_(4)
        return x + 1


    @torch.compile(backend="eager")
    def resized_like(x):
        y = torch.empty(0)
        y.resize_as_(x)
        return y.copy_(x) + 1


    def double(v):
        return v * 2


    @torch.compile(backend="eager")
    def applied(x):
        y = x.clone()
        y.apply_(double)
        return y


    @torch.compile(backend="eager")
    def array_resized(x):
        a = np.zeros(3)
        a.resize(4)
        return x + 1


    def main(x):
        return resized_input(x.clone()), resized_like(x), applied(x), array_resized(x)
"""
INPUTS = "[(torch.randn(2),)]"
BREAK_LINES = {7, 14, 25}


def test_check_reports_the_calls(tmp_path, capsys) -> None:
    path = write(tmp_path, "m.py", Example(CODE).source)
    _, out, _ = run(capsys, "--format", "json", path)
    found = {(d["line"], d["code"]) for d in json.loads(out) if d["kind"] == "graph-break"}
    assert found == {(line, "DYN105") for line in BREAK_LINES}


@requires_torch
def test_dynamo_breaks_on_those_lines(tmp_path) -> None:
    example = Example(CODE, inputs=INPUTS, target="main", compile_target=False)
    obs, module = run_example_under_dynamo(example, tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == BREAK_LINES
