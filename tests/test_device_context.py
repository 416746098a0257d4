"""``with torch.device(...)``: the object works as a context manager in eager code, but Dynamo has no rule
to enter it and runs the whole function eagerly. ``check`` reports the ``with``, built in place or held
in a name, and stays silent on a ``torch.device`` passed as an argument, which Dynamo traces."""
from __future__ import annotations

import json

from conftest import requires_torch
from dynalint.rules.base import Example
from helpers import run, run_example_under_dynamo, write

CODE = """\
    import torch


    @torch.compile(backend="eager")
    def entered(x):
        with torch.device("cpu"):
            y = torch.ones(2)
        return x + y


    @torch.compile(backend="eager")
    def entered_by_name(x):
        d = torch.device("cpu")
        with d:
            y = torch.zeros(2)
        return x + y


    @torch.compile(backend="eager")
    def passed(x):
        with torch.no_grad():
            y = torch.zeros(2, device=torch.device("cpu"))
        return x + y


    def main(x):
        return entered(x), entered_by_name(x), passed(x)
"""
INPUTS = "[(torch.randn(2),)]"
BREAK_LINES = {6, 14}


def test_check_reports_the_with_statements(tmp_path, capsys) -> None:
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
