"""DYN204 on a data-dependent size used after its graph break, where the script's calls hand the compiled
function data that a helper of the script draws afresh at each call (``fn(synthetic(40))`` with ``def
synthetic(n): return torch.randn(n)``): the size changes with the data, so the resumed frame, guarded on it,
recompiles (measured on torch 2.13).  A helper that returns data it did not draw (a fixed tensor) changes
nothing."""
from __future__ import annotations

from helpers import script_case_tests

SCRIPT = """\
import torch

FIXED = torch.randn(40)


def synthetic(n):
    return torch.randn(n) * 2.0


def fixed(n):
    return FIXED[:n]


def events(x):
    starts = torch.nonzero(x > 1.0).flatten()
    return starts * 2


if __name__ == "__main__":
    fn = torch.compile(events, backend="eager")
    torch.manual_seed(0)
    for _ in range(3):
        fn(synthetic(40))
"""
#: name -> (script, DYN204 lines, recompiles)
CASES = {"drawn-afresh": (SCRIPT, [15], 1),
         "a-fixed-tensor": (SCRIPT.replace("fn(synthetic(40))", "fn(fixed(40))"), [], 0)}

test_check, test_dynamo = script_case_tests(CASES, "DYN204")
