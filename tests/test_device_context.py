"""``with torch.device(...)``: the object works as a context manager in eager code, but Dynamo has no rule
to enter it and runs the whole function eagerly. ``check`` reports the ``with``, built in place or held
in a name, and stays silent on a ``torch.device`` passed as an argument, which Dynamo traces."""
from __future__ import annotations

from conftest import requires_torch
from helpers import checked_breaks, dynamo_break_lines

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
    assert checked_breaks(tmp_path, capsys, CODE) == {(line, "DYN105") for line in BREAK_LINES}


@requires_torch
def test_dynamo_breaks_on_those_lines(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, CODE, INPUTS) == BREAK_LINES
