"""Functions a script compiles other than at module level: a module-level function that hands one of its
parameters to ``torch.compile`` (``def maybe_compile(fn): return torch.compile(fn) if enabled else fn``)
compiles what each call of it in the module passes there, and a function defined inside another one
(``main()``) is compiled by its decorator or by ``torch.compile(name)`` there, and finds the objects the
enclosing function builds once (a module, an optimizer); a compile call bound to a name is a decorator
(``compile_eager = torch.compile(backend="eager")``, ``@compile_eager``): each is an entry point, as if it were compiled
directly.  Checked with ``dynalint check`` and under real Dynamo (the script calls what it
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
from torch import nn


def main(x):
    model = nn.Linear(3, 3).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    @torch.compile(backend="eager")
    def train_step(x: torch.Tensor) -> torch.Tensor:
        y = model(x)
        if y.sum() > 0:
            y = y + 1
        opt.zero_grad()
        return y

    def eval_step(x: torch.Tensor):
        return x.mean(), time.perf_counter()

    eval_fn = torch.compile(eval_step, backend="eager")
    return train_step(x), eval_fn(x)
"""
NESTED_BREAKS = {14, 16, 20}
"""A script's steps defined inside ``main()``: compiled by a decorator, or handed to ``torch.compile`` there,
with the module and optimizer ``main()`` builds."""


def test_check_reports_functions_compiled_where_they_are_defined(tmp_path, capsys) -> None:
    assert {line for line, _ in checked_breaks(tmp_path, capsys, NESTED)} == NESTED_BREAKS


@requires_torch
def test_dynamo_breaks_in_the_nested_functions(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, NESTED, "[(torch.ones(3),)]") == NESTED_BREAKS


ALIASED = """
import torch

compile_eager = torch.compile(backend="eager")


@compile_eager
def mean_size(boxes: list[torch.Tensor]) -> float:
    return torch.cat(boxes).abs().mean().item()


def main(x):
    return mean_size([x, x * 2])
"""
ALIASED_BREAKS = {8}
"""A compile call that compiles nothing yet, bound to a name and used as a decorator."""


def test_check_reports_functions_an_aliased_compile_decorates(tmp_path, capsys) -> None:
    assert {line for line, _ in checked_breaks(tmp_path, capsys, ALIASED)} == ALIASED_BREAKS


@requires_torch
def test_dynamo_breaks_in_the_decorated_function(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, ALIASED, "[(torch.ones(3),)]") == ALIASED_BREAKS
