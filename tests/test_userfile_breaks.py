"""Graph breaks of user-style code: a bound method compiled and stored back on its object, nn.Module
methods Dynamo does not trace, a Python number that sums tensors in a loop, a 0-d index from data
among other indices, and arithmetic on numbers ``random`` draws.
Each source is checked against the analysis and, with torch, against the lines Dynamo breaks on."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from conftest import requires_torch
from helpers import check

BOUND_METHOD = '''
import torch

class Learner:
    def __init__(self):
        self.w = torch.ones(3)
        self.steps = 0

    def update(self, x):
        y = x * self.w
        print("update", self.steps)
        return y.sum()

    def report(self, x):
        print("never compiled")
        return x

def run():
    log, learner = [], Learner()
    learner.update = torch.compile(learner.update, backend="eager")
    learner.update(torch.ones(3))
    learner.report(torch.ones(3))
'''

COMPILED_SELF_METHOD = '''
import torch

class Smoother:
    def __init__(self):
        self.fast = torch.compile(self.smooth, backend="eager")

    def smooth(self, values):
        print("smoothing")
        return values

def run():
    Smoother().fast(torch.ones(4))
'''

MODULE_METHODS = '''
import torch
import torch.nn as nn

online = nn.Linear(3, 3)
target = nn.Linear(3, 3)

@torch.compile(backend="eager")
def sync(x):
    n = sum(p.numel() for p in online.parameters())
    target.load_state_dict(online.state_dict())
    return x * n

def run():
    sync(torch.ones(3))
'''

LOOP_SUM = '''
import torch

def hardest(losses, k):
    total = 0.0
    for i in range(losses.size(0)):
        total += losses[i].topk(k).values.sum()
    return total / losses.size(0)

def counted(xs):
    total = 0.0
    for _ in range(xs.size(0)):
        total += 1.5
    return total

@torch.compile(backend="eager")
def step(losses):
    loss = hardest(losses, 2)
    n = counted(losses)
    loss.backward()
    return loss * n

def run():
    step(torch.rand(3, 5, requires_grad=True))
'''

DATA_INDEX = '''
import torch

@torch.compile(backend="eager")
def accept(p, q, given):
    best = q[0].argmax()
    kept = p[0, 1, given] * 2
    for i in range(2):
        r = p[0, i, best] / q[0, best]
        kept = kept + r
    return kept

def run():
    accept(torch.rand(1, 3, 6), torch.rand(1, 6), torch.tensor(2))
'''

RANDOM_CROP = '''
import random
import torch

def crop(x, width):
    w = random.randint(1, width)
    start = random.randint(0, x.shape[-1] - w)
    return x[..., start:start + w]

def scale(x):
    s = random.randint(1, 3)
    return x * s

@torch.compile(backend="eager")
def augment(x):
    return crop(scale(x), 3).sum()

@torch.compile(backend="eager")
def direct(x):
    w = random.randint(0, 4)
    return x + (20 - w)

def run():
    random.seed(0)
    for _ in range(2):
        augment(torch.ones(2, 10))
        direct(torch.ones(3))
'''

SEEDED_GENERATOR = '''
import torch

@torch.compile(backend="eager")
def noisy(h):
    g = torch.Generator().manual_seed(0)
    return h + torch.rand(4, 8, generator=g)

def run():
    noisy(torch.zeros(4, 8))
'''

SOURCES = {
    "bound_method": (BOUND_METHOD, {10}),
    "compiled_self_method": (COMPILED_SELF_METHOD, {8}),
    "module_methods": (MODULE_METHODS, {10}),
    "loop_sum": (LOOP_SUM, {19}),
    "data_index": (DATA_INDEX, {8}),
    "random_crop": (RANDOM_CROP, {6, 20}),
    "seeded_generator": (SEEDED_GENERATOR, {5, 6}),
}
"""Each source and the lines Dynamo breaks on (measured on torch 2.13; checked below)."""


def text(source: str) -> str:
    return textwrap.dedent(source).lstrip("\n")


def break_lines(source: str) -> set[int]:
    return {d.line for d in check(text(source)) if d.code.startswith("DYN1")}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_analysis_finds_the_break_lines(name):
    source, lines = SOURCES[name]
    assert break_lines(source) == lines


def test_a_method_never_compiled_stays_silent():
    assert not any(d.line == 14 for d in check(text(BOUND_METHOD)))


def test_a_sum_of_numbers_stays_a_number():
    """``counted`` adds numbers only: nothing there is a tensor, and ``loss * n`` breaks nothing."""
    assert break_lines(LOOP_SUM) == {19}


def test_random_numbers_with_tensors_are_traced():
    """``scale`` multiplies a tensor by the number, and ``crop`` runs eagerly after its first break."""
    assert not break_lines(RANDOM_CROP) & {7, 11}


_DRIVER = r'''
import importlib.util, logging, re, sys, io
import torch
buf = io.StringIO()
torch._logging.set_logs(graph_breaks=True)
logging.getLogger("torch._dynamo").addHandler(logging.StreamHandler(buf))
for name, path in zip(sys.argv[1::2], sys.argv[2::2]):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch._dynamo.reset()
    buf.seek(0); buf.truncate()
    module.run()
    lines = set()
    for block in buf.getvalue().split("Graph break")[1:]:  # the innermost frame in the file
        found = re.findall(r'File "' + re.escape(path) + r'", line (\d+)', block) \
            or re.findall(r"in user code at " + re.escape(path) + r":(\d+)", block)
        lines.update(int(n) for n in found[-1:])
    print(name, *sorted(lines))
'''


@requires_torch
def test_dynamo_breaks_on_the_same_lines(tmp_path):
    args = []
    for name, (source, _) in SOURCES.items():
        path = tmp_path / f"{name}.py"
        path.write_text(text(source))
        args += [name, str(path)]
    out = subprocess.run([sys.executable, "-c", _DRIVER, *args], capture_output=True, text=True, timeout=600,
                         check=True).stdout
    measured = {line.split()[0]: {int(n) for n in line.split()[1:]} for line in out.splitlines()
                if line.split() and line.split()[0] in SOURCES}
    assert measured == {name: lines for name, (_, lines) in SOURCES.items()}
    for name, (source, _) in SOURCES.items():
        assert break_lines(source) == measured[name], name
