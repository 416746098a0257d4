"""Functions a script compiles other than at module level: a module-level function that hands one of its
parameters to ``torch.compile`` (``def maybe_compile(fn): return torch.compile(fn) if enabled else fn``)
compiles what each call of it in the module passes there (so does a lambda bound to a name), and a
function defined inside another one (``main()``) is compiled by its decorator or by ``torch.compile(name)``
there, and finds the objects the
enclosing function builds once (a module, an optimizer); a compile call bound to a name is a decorator
(``compile_eager = torch.compile(backend="eager")``, ``@compile_eager``): each is an entry point, as if it were compiled
directly.  Checked with ``dynalint check`` and under real Dynamo (the script calls what it
compiled)."""
from __future__ import annotations

import pytest

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



REACHED = """
import math

import torch
from torch import nn


class CRF(nn.Module):
    def __init__(self):
        super().__init__()
        self.trans = nn.Parameter(torch.zeros(4, 4))

    def decode(self, em: torch.Tensor) -> list:
        _, best = (em + self.trans).max(dim=0)
        return [best[0].item()]


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.crf = CRF()

    def greedy(self, x: torch.Tensor) -> torch.Tensor:
        done = torch.zeros(x.size(0), dtype=torch.bool)
        for _ in range(3):
            x = x * 2
            done |= x[:, 0] > 100
            if done.all():
                break
        return x


def make_step(model: nn.Module, opt: torch.optim.Optimizer):
    @torch.compile(backend="eager")
    def step(x: torch.Tensor) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        return model(x).pow(2).mean()

    return step


class Encoder(nn.Module):
    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return x / math.sqrt(x.var())

    def summary(self, x: torch.Tensor) -> float:
        return x.abs().max().item()

    def scale(self, x: torch.Tensor) -> torch.Tensor:
        return x * float(x.std())


def main(x):
    tagger = Tagger().eval()
    decode = torch.compile(tagger.crf.decode, backend="eager")
    greedy = torch.compile(tagger.greedy, backend="eager")
    model = nn.Linear(4, 4)
    step = make_step(model, torch.optim.SGD(model.parameters(), lr=0.1))
    encoder = Encoder()
    fn = encoder.encode
    encode = torch.compile(fn, backend="eager")
    summary = torch.compile(getattr(encoder, "summary"), backend="eager")
    scale = torch.compile(backend="eager")(encoder.scale)
    return decode(x), greedy(x), step(x), encode(x), summary(x), scale(x)
"""
REACHED_BREAKS = {14, 27, 35, 43, 46, 49}
"""What a script compiles through a module built with ``.eval()``, through a submodule (``tagger.crf.decode``),
through a name bound to a method or ``getattr(obj, "name")``, by what ``torch.compile(backend=...)`` returns,
and the optimizer a factory receives (annotated)
and its compiled step uses."""


LAMBDA = """
import random

import torch


def sample(x):
    if random.random() > 2.0:
        return x
    return x * 2


def seeded(x):
    torch.manual_seed(7)
    return x + 1


def main(x):
    c = lambda f: torch.compile(f, backend="eager")
    return c(sample)(x), c(seeded)(x)
"""
LAMBDA_BREAKS = {7, 13}
"""What a lambda bound to a name compiles (``c = lambda f: torch.compile(f)``, then ``c(sample)(x)``): the
functions its calls there pass it, whatever their bodies do."""


#: (name, code, inputs, the lines Dynamo breaks on)
CASES = [
    ("wrapper", CODE, INPUTS, BREAKS),
    ("nested", NESTED, "[(torch.ones(3),)]", NESTED_BREAKS),
    ("aliased-decorator", ALIASED, "[(torch.ones(3),)]", ALIASED_BREAKS),
    ("through-objects", REACHED, "[(torch.randn(4, 4),)]", REACHED_BREAKS),
    ("lambda", LAMBDA, "[(torch.ones(3),)]", LAMBDA_BREAKS),
]
_parametrize = pytest.mark.parametrize("name, code, inputs, breaks", CASES, ids=[c[0] for c in CASES])


@_parametrize
def test_check_reports_what_is_compiled(name, code, inputs, breaks, tmp_path, capsys) -> None:
    assert {line for line, _ in checked_breaks(tmp_path, capsys, code)} == breaks


@requires_torch
@_parametrize
def test_dynamo_breaks_on_those_lines(name, code, inputs, breaks, tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, code, inputs) == breaks
