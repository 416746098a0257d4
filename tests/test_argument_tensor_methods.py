"""Tensor methods that take arguments and that Dynamo breaks on whatever the arguments: ``resize_`` and
``resize_as_`` (of an input or of a tensor made in the graph), ``set_`` (pointing a tensor at another's storage) and
``apply_`` (its Python function cannot be put in a graph); and any torch function that makes a tensor with
``requires_grad=True``. ``check`` reports each call and stays silent on a NumPy array's ``resize``, traced, and on
``requires_grad=False``."""
from __future__ import annotations

from conftest import requires_torch
from helpers import checked_breaks, dynamo_break_lines

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


    @torch.compile(backend="eager")
    def repointed(x, src):
        x.set_(src)
        return x * 2


    @torch.compile(backend="eager")
    def made_with_grad(x):
        w = torch.zeros(x.shape[0], requires_grad=True)
        v = torch.ones_like(x, requires_grad=False)
        return x * w + v


    def main(x):
        return (resized_input(x.clone()), resized_like(x), applied(x), array_resized(x), repointed(x.clone(), x + 1),
                made_with_grad(x))
"""
INPUTS = "[(torch.randn(2),)]"
BREAK_LINES = {7, 14, 25, 38, 44}


def test_check_reports_the_calls(tmp_path, capsys) -> None:
    assert checked_breaks(tmp_path, capsys, CODE) == {(line, "DYN105") for line in BREAK_LINES}


@requires_torch
def test_dynamo_breaks_on_those_lines(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, CODE, INPUTS) == BREAK_LINES
