"""DYN203 and the frames Dynamo guards nothing in. A method called from the part of a function Dynamo runs
eagerly (after a break in a loop) is a frame of its own; with no tensor operation in it, Dynamo skips it ("No
ops traced for the FX graph") and the list it grows recompiles nothing. With one tensor operation it is
compiled, guarded on the list's length, and recompiles. A counter a function changes after a break in a loop
is never traced, nor is one a method changes in a frame resumed after a break that holds nothing
tensor-related. Measured on torch 2.13."""
from __future__ import annotations

from helpers import script_case_tests

BEAMS = """\
import torch


class Hyps:
    def __init__(self, n=2):
        self.n = n
        self.beams = []

    def add(self, hyp, score):
        score = score / hyp.shape[-1]
        if len(self.beams) < self.n:
            self.beams.append((score, hyp))


def search(x):
    h = Hyps()
    for i in range(3):
        h.add(x[i].clone(), x[i].sum().item())
    return len(h.beams)


if __name__ == "__main__":
    f = torch.compile(search, backend="eager")
    f(torch.randn(4, 5))
    f(torch.randn(4, 5))
"""

TRAINER = """\
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.model = nn.Linear(4, 1)
        self.step = 0

    def train_step(self, micro_batches):
        for x in micro_batches:
            print("batch", x.shape)
            self.model(x).sum().backward()
        self.step += 1
        return self.step


if __name__ == "__main__":
    t = Trainer()
    f = torch.compile(t.train_step, backend="eager")
    for _ in range(3):
        f([torch.randn(2, 4), torch.randn(2, 4)])
"""

#: the frame resumed after the `.item()` holds only `self`, an object of a plain class, and the number taken:
#: Dynamo finds nothing tensor-related in it and skips it, and the method it calls is a frame of its own with
#: no tensor operation; a tensor operation after the break makes the resumed frame compiled, guarded on the
#: counter it reads through the method (the same data at each call: the number taken does not change, so
#: the resumed frame recompiles on the counter alone)
ACCOUNTANT = """\
import torch


class Accountant:
    def __init__(self):
        self.steps = 0

    def step(self):
        self.steps += 1


class Trainer:
    def __init__(self):
        self.acc = Accountant()

    def train_step(self, x):
        frac = (x > 0).float().mean().item()
        self.acc.step()
        return frac


if __name__ == "__main__":
    t = Trainer()
    f = torch.compile(t.train_step, backend="eager")
    for _ in range(3):
        f(torch.ones(8))
"""

#: a dict a `forward` fills with `.item()` values inside its loop, whose break makes Dynamo run the whole
#: `forward` eagerly: no use of the dict is traced, so nothing guards its keys; read before the loop, in the
#: part Dynamo compiles, its keys are guarded and each new one recompiles
STATS = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.stats = {}

    def forward(self, x):
        for i, b in enumerate(self.blocks):
            x = b(x)
            self.stats[f"b{i}"] = x.abs().mean().item()
        return x


if __name__ == "__main__":
    m = Net()
    cm = torch.compile(m, backend="eager")
    with torch.no_grad():
        for _ in range(3):
            cm(torch.rand(2, 4))
"""

#: a meter's `update`, which breaks on every path (`float(value)`): Dynamo breaks at the call and runs it as a
#: frame of its own, which has no graph before the break nor after it, and still guards on the total it read
#: before the break (once: the float is then dynamic)
METER = """\
import torch


class RunningMean:
    def __init__(self):
        self.total = 0.0

    def update(self, value, n):
        self.total += float(value) * n


rm = RunningMean()


def evaluate(x):
    loss = (x * x).mean()
    rm.update(loss, x.shape[0])
    return loss


if __name__ == "__main__":
    f = torch.compile(evaluate, backend="eager")
    for _ in range(4):
        f(torch.randn(4))
"""

#: name -> (script, DYN203 lines, recompiles)
CASES = {"no-tensor-operation": (BEAMS, [], 0),
         "dict-filled-in-an-eager-loop": (STATS, [], 0),
         "resumed-frame-without-tensors": (ACCOUNTANT, [], 0),
         "resumed-frame-with-a-tensor-operation": (
             ACCOUNTANT.replace("        return frac\n", "        return frac * torch.ones(1)\n"), [9], 1),
         "one-tensor-operation": (BEAMS.replace("self.beams.append((score, hyp))",
                                                "self.beams.append((score, hyp * 1))"), [12], 4),
         "after-a-break-in-a-loop": (TRAINER, [], 0),
         "a-helper-that-breaks-with-no-graph": (METER, [9], 1)}

test_check, test_dynamo = script_case_tests(CASES, "DYN203")


RECORDER = """\
import torch


class ActivationRecorder:
    def __init__(self):
        self.acts = []

    def __enter__(self):
        self.acts.clear()
        return self

    def add(self, t):
        self.acts.append(t.detach())
        return t

    def __exit__(self, *exc):
        return False


def forward(x):
    with ActivationRecorder() as rec:
        h = rec.add(torch.relu(x))
        h = rec.add(h * 2)
    return h + 1e-4 * sum(a.pow(2).mean() for a in rec.acts)


if __name__ == "__main__":
    f = torch.compile(forward, backend="eager")
    for n in (3, 3, 3):
        f(torch.randn(n))
"""
"""An object the compiled function builds at every call (`with ActivationRecorder() as rec:`): the list it
grows starts empty at each call, and no later call reads it."""

test_check_built_each_call, test_dynamo_built_each_call = script_case_tests(
    {"a-recorder-built-at-each-call": (RECORDER, [], 0)}, "DYN203")
