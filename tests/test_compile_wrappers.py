"""Functions a script compiles other than at module level: a module-level function that hands one of its
parameters to ``torch.compile`` (``def maybe_compile(fn): return torch.compile(fn) if enabled else fn``)
compiles what each call of it in the module passes there, and a function defined inside another one
(``main()``) is compiled by its decorator or by ``torch.compile(name)`` there: each is an entry point, as if
it were compiled directly.  Checked with ``dynalint check`` and under real Dynamo (the script calls what it
compiled)."""
from __future__ import annotations

from conftest import requires_torch
from helpers import checked_breaks, dynamo_break_lines

CODE = """
import math

import torch


def maybe_compile(fn, enabled=True):
    return torch.compile(fn, backend="eager") if enabled else fn


def coefficient(alphas, x):
    a = alphas[3]
    if a < 0.5:
        x = x * 2
    return x * math.sqrt(a)


def main(alphas, x):
    step = maybe_compile(enabled=True, fn=coefficient)
    return step(alphas, x)
"""
INPUTS = "[(torch.linspace(0.9, 0.1, 10), torch.randn(3))]"
BREAKS = {12, 14}


def test_check_reports_what_the_wrapper_compiles(tmp_path, capsys) -> None:
    assert {line for line, _ in checked_breaks(tmp_path, capsys, CODE)} == BREAKS


@requires_torch
def test_dynamo_breaks_on_those_lines(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, CODE, INPUTS) == BREAKS


NESTED = """
import time

import torch


def main(x):
    @torch.compile(backend="eager")
    def train_step(x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        if y.sum() > 0:
            y = y + 1
        return y

    def eval_step(x: torch.Tensor):
        return x.mean(), time.perf_counter()

    eval_fn = torch.compile(eval_step, backend="eager")
    return train_step(x), eval_fn(x)
"""
NESTED_BREAKS = {10, 15}
"""A script's steps defined inside ``main()``: compiled by a decorator, or handed to ``torch.compile`` there."""


def test_check_reports_functions_compiled_where_they_are_defined(tmp_path, capsys) -> None:
    assert {line for line, _ in checked_breaks(tmp_path, capsys, NESTED)} == NESTED_BREAKS


@requires_torch
def test_dynamo_breaks_in_the_nested_functions(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, NESTED, "[(torch.ones(3),)]") == NESTED_BREAKS
