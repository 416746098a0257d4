"""A compiled function's untyped parameter to which every call in the project passes an object of one class
(a model built from a class of the checked code, a ``torch.optim`` optimizer, an instance with a method
``torch.compiler.disable`` skips) is that object: the model's ``forward`` runs with the step's arguments, and
the optimizer's ``step()`` and ``zero_grad()`` and the skipped method break where Dynamo breaks.  A parameter
its callers pass different things stays as it was (taken for a tensor).  Each case is also run under real
Dynamo."""
from __future__ import annotations

from conftest import requires_torch
from helpers import break_lines, dynamo_break_lines, marked_lines

SCRIPT = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 1)

    def forward(self, x):
        out = self.lin(x)
        if out.sum() > 0:  # breaks
            out = out * 2
        return out


class Logger:
    @torch.compiler.disable
    def log(self, value):
        return value


@torch.compile(backend="eager")
def train_step(model, opt, log, x, y):
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()  # breaks
    opt.step()  # breaks
    opt.zero_grad()  # breaks
    return log.log(loss.detach())  # breaks


@torch.compile(backend="eager")
def scale(v, w):
    return v * w


def main(x, y):
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    log = Logger()
    for _ in range(2):
        train_step(model, opt, log, x, y)
    return scale(x, 2.0) + scale(x, y)
"""


def test_objects_every_caller_passes_are_what_the_step_runs() -> None:
    assert break_lines(SCRIPT) == marked_lines(SCRIPT)


@requires_torch
def test_those_lines_are_dynamos(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, SCRIPT, "[(torch.randn(4, 3), torch.randn(4, 1))]") == marked_lines(SCRIPT)
