"""DYN205 for instances of one class compiled one by one: they share the compiled code of the method they run
(one cache per code object), so an attribute their ``__init__`` stores from a parameter, given other constants
by their constructions (two written out, or one a loop passes its values), recompiles that method for the next
instance; instances built alike recompile nothing.  A read after an ``nn.LSTM`` call, where Dynamo skips the
frame, guards nothing.  Each script also runs under real Dynamo (torch 2.13), which counts the recompiles."""
from __future__ import annotations

from helpers import script_case_tests

TWO_MODULES = """\
import torch
import torch.nn as nn


class Scaled(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = scale

    def forward(self, x):
        return self.lin(x) * self.scale


if __name__ == "__main__":
    a, b = Scaled({first}), Scaled({second})
    ca, cb = torch.compile(a, backend="eager"), torch.compile(b, backend="eager")
    x = torch.randn(2, 4)
    ca(x)
    cb(x)
"""

METHOD_PER_INSTANCE = """\
import torch


class Integrator:
    def __init__(self, dt, thermostat=False):
        self.dt = dt
        self.thermostat = thermostat

    def step(self, x, v):
        v = v - self.dt * x
        if self.thermostat:
            v = v * 0.9
        return x + self.dt * v, v


if __name__ == "__main__":
    for thermo in [False, True]:
        integ = Integrator(0.01, thermostat=thermo)
        step = torch.compile(integ.step, backend="eager")
        x, v = torch.randn(4, 3), torch.randn(4, 3)
        for _ in range(2):
            x, v = step(x, v)
"""

AFTER_AN_RNN = """\
import torch
import torch.nn as nn


class Dec(nn.Module):
    def __init__(self, score="general"):
        super().__init__()
        self.score = score
        self.rnn = nn.LSTM(8, 8, batch_first=True)

    def forward(self, x):
        o, _ = self.rnn(x)
        if self.score == "dot":
            return o.sum(-1)
        return o.mean(-1)


if __name__ == "__main__":
    dec = Dec()
    step = torch.compile(dec, backend="eager")
    step(torch.randn(2, 3, 8))
    dec.score = "dot"
    step(torch.randn(2, 3, 8))
"""

BUILT_WHERE_COMPILED = TWO_MODULES.replace(
    """    a, b = Scaled({first}), Scaled({second})
    ca, cb = torch.compile(a, backend="eager"), torch.compile(b, backend="eager")""",
    """    ca = torch.compile(Scaled(1), backend="eager")
    cb = torch.compile(Scaled(2), backend="eager")
    cc = torch.compile(Scaled(4), backend="eager")""").replace("    cb(x)", "    cb(x)\n    cc(x)")

test_check, test_dynamo = script_case_tests({
    "two-modules": (TWO_MODULES.format(first="1.0", second="3.0"), [12], 1),
    "built-where-compiled": (BUILT_WHERE_COMPILED, [12], 2),
    "two-modules-alike": (TWO_MODULES.format(first="1.0", second="1.0"), [], 0),
    "a-method-per-instance": (METHOD_PER_INSTANCE, [11], 1),
    "after-an-rnn": (AFTER_AN_RNN, [], 0),
}, "DYN205")
