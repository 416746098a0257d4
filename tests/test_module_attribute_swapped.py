"""DYN205 and a submodule swapped from outside compiled code: another instance of one ``nn.Module`` class,
built alike (``self.cache = Cache()`` before each generation), is guarded on its class and what it holds, not
on which instance it is, so nothing recompiles and nothing is reported; a ``None`` stored between calls
instead is a value of another kind, and recompiles; so does a float of a submodule the script sets to each
constant a loop steps through (``m.sc.s = s``).  Each script also runs under real Dynamo (torch 2.13)."""
from __future__ import annotations

from helpers import script_case_tests

SWAPPED = """\
import torch
import torch.nn as nn


class Cache(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("k", torch.zeros(1, 8, 4))


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.cache = None

    def setup_cache(self):
        self.cache = Cache()

    def drop_cache(self):
        self.cache = None

    def forward(self, x, pos):
        y = self.lin(x)
        if self.cache is not None:
            self.cache.k[:, pos:pos + 1] = y
        return y


if __name__ == "__main__":
    m = Attn()
    step = torch.compile(m, backend="eager")
    for _ in range(3):
        m.setup_cache()
        step(torch.randn(1, 1, 4), 0)
{more}
"""

CASES = {
    "a-new-instance-alike": (SWAPPED.format(more=""), [], 0),
    "none-between-calls": (SWAPPED.format(more="""\
    m.drop_cache()
    step(torch.randn(1, 1, 4), 0)"""), [25], 1),
}

test_check, test_dynamo = script_case_tests(CASES, "DYN205")

# a submodule's float the script sets to each constant a loop steps through (`m.sc.s = s`, or through a name that
# holds the submodule): guarded on its value, one recompile, then dynamic
SUBMODULE_FLOAT = """\
import torch
import torch.nn as nn


class ScaleBy(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.s = s

    def forward(self, X):
        return X * self.s


class M(nn.Module):
    def __init__(self, sc):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.sc = sc

    def forward(self, x):
        return self.sc(self.lin(x))


if __name__ == "__main__":
    m = M(ScaleBy(1.0))
    g = torch.compile(m, backend="eager")
    for s in ({values}):
        m.sc.s = s
        g(torch.ones(1, 4))
"""

test_check_nested, test_dynamo_nested = script_case_tests({
    "submodule-float-set-in-a-loop": (SUBMODULE_FLOAT.format(values="1.0, 0.5, 0.25"), [11], 1),
    "submodule-float-set-alike": (SUBMODULE_FLOAT.format(values="1.0, 1.0"), [], 0),
}, "DYN205")
