"""Parameters of compiled code that every caller passes a Python number are numbers, not tensors.

The callers are found through what ``torch.compile(f)`` returned (``f_c = torch.compile(f)``, then
``f_c(...)``), through a dict of numbers spread with ``**``, and through a parameter a caller forwards
from its own number parameter.  Each case below runs under Dynamo (torch 2.13, ``backend="eager"``)
without a graph break; the counter-cases, which pass a tensor at the same place, break where the
finding stays.
"""
from __future__ import annotations

import sys
import textwrap

import pytest

from conftest import requires_torch
from helpers import finding_lines, run, write

REFINE = """
    import torch
    import torch.nn as nn


    class Refiner(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x, rounds=4):
            for _ in range(rounds):
                x = self.lin(x)
            return x


    net = Refiner()


    def step(x, rounds):
        return net(x, rounds=rounds).sum()


    step_c = torch.compile(step)


    def main():
        for epoch in range(5):
            rounds = 2 if epoch < 3 else 3
            step_c(torch.randn(2, 4), ROUNDS)
"""

WINDOW = """
    import torch

    WINDOWS = [{"lo": 1.0, "hi": 3.0}, {"lo": 0.5, "hi": 2.0}]


    def accumulate(x, lo, hi, dt):
        t = lo
        while t < hi:
            x = x + t
            t += dt
        return x


    accumulate_c = torch.compile(accumulate)


    def main():
        for w in WINDOWS:
            accumulate_c(torch.ones(3), w["lo"], HI, 0.5)
"""

GROW = """
    import torch


    def grow(seq, budget):
        start = seq.shape[1]
        while seq.shape[1] - start < budget:
            seq = torch.cat([seq, seq[:, -1:]], dim=1)
        return seq


    grow_c = torch.compile(grow)


    def main():
        for seq in (torch.ones(1, 3), torch.ones(1, 5)):
            grow_c(seq, BUDGET)
"""

HEAD = """
    import torch
    import torch.nn as nn


    class Head(nn.Module):
        def __init__(self, length=3):
            super().__init__()
            self.length = length
            self.lin = nn.Linear(4, 4)

        def forward(self, x, length=None):
            length = length or self.length
            outs = []
            for _ in range(length):
                x = self.lin(x)
                outs.append(x)
            return torch.stack(outs)


    head = Head()


    def predict(x, length):
        return head(x, length=length)


    predict_c = torch.compile(predict)


    def main():
        for n in (2, 5):
            predict_c(torch.randn(2, 4), LENGTH)
"""

SAMPLE = """
    import torch


    def scale(logits, temperature):
        if temperature == 0:
            return logits.argmax(-1).float()
        return (logits / temperature).softmax(-1)


    def sample(logits, temperature, top=1.0):
        return scale(logits, temperature) * top


    sample_c = torch.compile(sample)


    def main():
        for cfg in ({"temperature": 1.0}, {"temperature": TEMPERATURE}):
            sample_c(torch.randn(2, 4), **cfg)
"""

# (name, source, placeholder, a number for it, a tensor for it, the text of the line whose finding it
#  decides, the code found there with a tensor, extra options)
CASES = [
    ("conditional number through a compiled handle", REFINE, "ROUNDS", "rounds", "torch.tensor(3)", "range(rounds)",
     "DYN103", ()),
    ("floats read from dicts of numbers", WINDOW, "HI", 'w["hi"]', "torch.tensor(3.0)", "while t < hi", "DYN103", ()),
    ("shape arithmetic against a number", GROW, "BUDGET", "4", "torch.tensor(4)", "while seq.shape", "DYN103", ()),
    ("keyword forwarded to forward, `or` default", HEAD, "LENGTH", "n", "torch.tensor(2)", "length or", "DYN101", ()),
    ("dict of numbers spread with **, forwarded", SAMPLE, "TEMPERATURE", "0.0", "torch.tensor(0.0)", "temperature == 0",
     "DYN101", ("--scope", "all")),
]
IDS = [c[0] for c in CASES]


def _source(code: str, placeholder: str, value: str) -> str:
    return textwrap.dedent(code).lstrip("\n").replace(placeholder, value)


def _codes_on(capsys, tmp_path, source: str, text: str, options: tuple[str, ...]) -> set[str]:
    """The codes ``dynalint check`` reports on the line of ``source`` that holds ``text``."""
    line = next(n for n, held in enumerate(source.splitlines(), 1) if text in held)
    path = write(tmp_path, "script.py", source)
    _, out, _ = run(capsys, *options, path)
    return {found.split()[1] for found in finding_lines(out) if found.startswith(f"{path}:{line}:")}


@pytest.mark.parametrize("name, code, placeholder, number, tensor, text, code_found, options", CASES, ids=IDS)
def test_a_number_every_caller_passes_is_no_tensor(capsys, tmp_path, name, code, placeholder, number, tensor,
                                                   text, code_found, options):
    source = _source(code, placeholder, number)
    assert _codes_on(capsys, tmp_path, source, text, options) == set()


@pytest.mark.parametrize("name, code, placeholder, number, tensor, text, code_found, options", CASES, ids=IDS)
def test_a_tensor_one_caller_passes_stays_a_tensor(capsys, tmp_path, name, code, placeholder, number, tensor,
                                                   text, code_found, options):
    source = _source(code, placeholder, tensor)
    assert code_found in _codes_on(capsys, tmp_path, source, text, options)


def _breaks_under_dynamo(source: str, tmp_path) -> int:
    """The graph breaks Dynamo logs running ``main()`` of ``source`` with every compile eager."""
    import importlib.util

    import torch
    from torch._dynamo.utils import counters

    path = write(tmp_path, "dynamo_case.py", source.replace("torch.compile(", "torch.compile(backend='eager')("))
    torch._dynamo.reset()
    counters.clear()
    spec = importlib.util.spec_from_file_location("dynamo_case", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["dynamo_case"] = module
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        module.main()
    finally:
        del sys.modules["dynamo_case"]
    # a break in a loop's test is counted among the frames Dynamo could not trace through
    return sum(counters["graph_break"].values()) + sum(counters["unimplemented"].values())


@requires_torch
@pytest.mark.parametrize("name, code, placeholder, number, tensor, text, code_found, options", CASES, ids=IDS)
def test_the_cases_under_dynamo(tmp_path, name, code, placeholder, number, tensor, text, code_found, options):
    assert _breaks_under_dynamo(_source(code, placeholder, number), tmp_path) == 0
    assert _breaks_under_dynamo(_source(code, placeholder, tensor), tmp_path) > 0
