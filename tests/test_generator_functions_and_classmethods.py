"""Generator functions and classmethods of the checked code, called from compiled code.

Dynamo runs a generator's body where the compiled caller steps it, so what breaks in its body breaks
there, and what it yields is what the caller's loop or comprehension sees (a tensor whose truth is then
a data-dependent branch).  ``C.apply(...)`` of an ``autograd.Function`` with a static ``forward`` gives what
that ``forward`` returns.  A generator compiled itself is not traced: Dynamo skips a generator's frame.
A classmethod receives the class it was read on, so ``cls.norm(x)`` runs that class's ``norm``; but an
``autograd.Function`` whose ``forward`` is a classmethod cannot be bound when Dynamo traces it for autograd
(an input requires grad), given an argument for each parameter.  Each case is also run under real Dynamo."""
from __future__ import annotations

import importlib
import json

from conftest import requires_torch
from helpers import marked_case_tests, run, write

CASES = [
    ("generator-body-breaks-and-the-caller-runs-eagerly", """
    import torch


    def chunks(x):
        for c in x.split(2):
            yield c * c.max().item()  # breaks


    def f(x):
        out = torch.cat(list(chunks(x)))
        if out.sum() > 0:  # Dynamo cannot resume inside the generator: the rest runs eagerly
            out = out + 1
        return out
    """, "f", "[(torch.tensor([1.0, -2.0, 3.0, 4.0]),)]"),
    ("yielded-values", """
    import torch


    def pairs(x):
        yield from [x, x + 1]


    def f(x):
        out = x
        for p in pairs(x):
            if p.mean() > 0:  # breaks
                out = out + p.sum()
        return out
    """, "f", "[(torch.tensor([1.0, -2.0, 3.0, 4.0]),)]"),
    ("generator-of-submodules", """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

        def blocks(self):
            for layer in self.layers:
                yield layer

        def forward(self, x):
            for blk in self.blocks():
                x = blk(x)
            return x.sum().item()  # breaks


    net = Net()


    def f(x):
        return net(x)
    """, "f", "[(torch.ones(2, 4),)]"),
    ("autograd-function-with-a-classmethod-forward", """
    import torch
    from torch.autograd import Function


    class Scale(Function):
        @classmethod
        def forward(cls, ctx, x, dim=0, k=None):
            ctx.dim = dim
            return x * 2

        @classmethod
        def backward(cls, ctx, dy):
            return dy * 2, None, None


    class Double(Function):
        @staticmethod
        def forward(ctx, x, dim=0):
            return x * 2

        @staticmethod
        def backward(ctx, dy):
            return dy * 2, None


    def f(x):
        y = Scale.apply(x, -1, None)  # breaks
        return Double.apply(y, -1)
    """, "f", "[(torch.ones(3, requires_grad=True),)]"),
    ("classmethod-calls-through-cls", """
    import torch


    class Util:
        @staticmethod
        def norm(x):
            return x / x.norm().item()  # breaks

        @classmethod
        def make(cls, x):
            return cls.norm(x)


    def f(x):
        return Util.make(x)
    """, "f", "[(torch.ones(3),)]"),
    ("autograd-function-result-is-what-forward-returns", """
    import torch


    class LowerBound(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, bound):
            ctx.save_for_backward(x, bound)
            return torch.max(x, bound)

        @staticmethod
        def backward(ctx, g):
            return g, None


    def f(x, bound):
        y = LowerBound.apply(x, bound)
        if y.sum() > 0:  # breaks
            y = y * 2
        return y
    """, "f", "[(torch.ones(3, requires_grad=True), torch.zeros(3))]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)

COMPILED_GENERATOR = """\
import torch


@torch.compile(backend="eager")
def scaled(x):
    for c in x.split(2):
        yield c * c.max().item()


def main(x):
    return torch.cat(list(scaled(x)))
"""


def test_a_compiled_generator_is_not_reported(tmp_path, capsys) -> None:
    path = write(tmp_path, "gen_model.py", COMPILED_GENERATOR)
    _, out, _ = run(capsys, "--format", "json", path)
    assert [d for d in json.loads(out) if d["kind"] == "graph-break"] == []


@requires_torch
def test_dynamo_skips_a_compiled_generator(tmp_path, monkeypatch) -> None:
    import torch

    from dynalint.verify.probe import observe

    path = write(tmp_path, "gen_model.py", COMPILED_GENERATOR)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("gen_model")
    obs = observe(module.main, [(torch.tensor([1.0, -2.0, 3.0, 4.0]),)], files_of_interest=[path], compile=False)
    assert not obs.errors, obs.errors
    assert obs.break_lines(path) == set()
    assert len(module.main(torch.ones(4))) == 4  # it ran (eagerly)
