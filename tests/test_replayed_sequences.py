"""DYN206 where the values a loop hands a compiled function come from a sequence the script builds before the
loop: a list it grows with ``append``/``extend`` (``systems.append((pos, None))``), also in a loop of its own
or with a tensor it changes in place first, a list repeated and joined (``[("epsilon", 8)] * 2 +
[("v_prediction", 8)] * 2``), or ``list(range(...))``, and a number a method of an object the script made
computes (``sched.lr(s)``): the replay runs those statements, so it knows what each iteration passes.  A list
grown only with values of one kind is one graph.  Each script also runs under real Dynamo (torch 2.13), which
counts the recompiles."""
from __future__ import annotations

from helpers import script_case_tests

PREDICT = """\
import torch


@torch.compile(backend="eager")
def predict(pos, cell=None):
    e = (pos ** 2).sum()
    if cell is not None:
        e = e + cell.trace()
    return e
"""

APPENDED = PREDICT + """


def main():
    systems = []
    systems.append((torch.randn(4, 3), None))
    systems.append((torch.randn(4, 3), torch.eye(3)))
    for pos, cell in systems:
        print(predict(pos, cell))


if __name__ == "__main__":
    main()
"""

EXTENDED_AT_MODULE_LEVEL = """\
import torch


@torch.compile(backend="eager")
def scale(x, factor):
    return x * factor


factors = [1.0]
factors.extend([2.0, 3.0])
for f in factors:
    scale(torch.randn(4), f)
"""

ONE_KIND = PREDICT + """


if __name__ == "__main__":
    systems = []
    for _ in range(3):
        systems.append((torch.randn(4, 3), torch.eye(3)))
    for pos, cell in systems:
        predict(pos, cell)
"""

GROWN_IN_A_LOOP = """\
import torch

lin = torch.nn.Linear(8, 4)


def train_step(x, mask=None):
    h = lin(x)
    if mask is not None:
        h = h * mask.unsqueeze(-1)
    return h.sum()


if __name__ == "__main__":
    step = torch.compile(train_step, backend="eager")
    for epoch in range(2):
        batches = []
        for _ in range(2):
            mask = torch.ones(2) if epoch == 1 else None
            if mask is not None:
                mask[0] = 0
            batches.append((torch.randn(2, 8), mask))
        for x, mask in batches:
            step(x, mask)
"""

REPEATED_AND_JOINED = """\
import torch


def loss_fn(x, prediction_type):
    if prediction_type == "epsilon":
        return x.pow(2).mean()
    return x.abs().mean()


if __name__ == "__main__":
    f = torch.compile(loss_fn, backend="eager")
    for step, (ptype, bs) in enumerate([("epsilon", 8)] * 2 + [("v_prediction", 8)] * 2):
        f(torch.randn(bs), ptype)
"""

LIST_OF_A_RANGE = """\
import torch


def denoise(x, t):
    return x * 0.9 + t * 0.001


if __name__ == "__main__":
    f = torch.compile(denoise, backend="eager")
    x = torch.randn(4, 3)
    timesteps = list(range(99, -1, -25))
    for t in timesteps:
        x = f(x, t)
"""

SCHEDULE_OBJECT = """\
import torch
import torch.nn as nn


class Schedule:
    def __init__(self, steps):
        self.steps = steps

    def lr(self, step):
        return 0.1 * (1 - step / self.steps)


def step(model, lr, x):
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p


if __name__ == "__main__":
    model = nn.Linear(4, 4)
    sched = Schedule(5)
    f = torch.compile(step, backend="eager")
    x = torch.randn(3, 4)
    for s in range(3):
        f(model, sched.lr(s), x)
"""

CASES = {
    "method-of-a-schedule-object": (SCHEDULE_OBJECT, [13], 1),
    "grown-in-a-loop": (GROWN_IN_A_LOOP, [6], 1),
    "repeated-and-joined": (REPEATED_AND_JOINED, [4], 1),
    "list-of-a-range": (LIST_OF_A_RANGE, [4], 1),
    "appended": (APPENDED, [5], 1),
    "extended-at-module-level": (EXTENDED_AT_MODULE_LEVEL, [5], 1),
    "one-kind": (ONE_KIND, [], 0),
}

test_check, test_dynamo = script_case_tests(CASES, "DYN206")
