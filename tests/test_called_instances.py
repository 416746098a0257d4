"""DYN205 where the script calls an instance (``p(x)``) whose ``__call__`` runs a method the class compiles
for itself (``self.predict = torch.compile(self._predict)``): the call runs compiled code, so an attribute the
script sets after it (``p.tta = True``) changes what the next call reads, and Dynamo, which guards on it,
recompiles; set before the first call, it recompiles nothing.  Each script also runs under real Dynamo (torch
2.13), which counts the recompiles."""
from __future__ import annotations

from helpers import script_case_tests

PREDICTOR = """\
import torch


class Predictor:
    def __init__(self, tta=False):
        self.tta = tta
        self.predict = torch.compile(self._predict, backend="eager")

    def _predict(self, x):
        y = x.sigmoid()
        if self.tta:
            y = (y + x.flip(2).sigmoid().flip(2)) / 2
        return y

    def __call__(self, x):
        return self.predict(x)


if __name__ == "__main__":
    p = Predictor()
    x = torch.randn(1, 1, 4, 4, 4)
{calls}
"""

test_check, test_dynamo = script_case_tests({
    "set-between-calls": (PREDICTOR.format(calls="    p(x)\n    p.tta = True\n    p(x)"), [11], 1),
    "set-before-the-first-call": (PREDICTOR.format(calls="    p.tta = True\n    p(x)\n    p(x)"), [], 0),
}, "DYN205")
