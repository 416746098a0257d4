"""DYN203 and a dict that compiled code stores into at the keys it holds already: one ``__init__`` builds with
a comprehension over the keys of another dict it keeps (``self.masks = {n: ... for n, p in params.items()}``),
stored into in a loop over that other dict's keys (``for n, p in self.params.items(): self.masks[n] = ...``),
keeps its keys, and Dynamo guards nothing that changes; a key made from the loop's (``n + "_m"``) is a new
one.  Each script also runs under real Dynamo (torch 2.13), which counts the recompiles."""
from __future__ import annotations

from helpers import script_case_tests

PRUNER = """\
import torch


class Pruner:
    def __init__(self, params):
        self.params = params
        self.masks = {{n: torch.ones_like(p) for n, p in params.items()}}

    def update(self, sparsity):
        for n, p in self.params.items():
            thresh = torch.quantile(p.abs().flatten(), sparsity)
            self.masks[n{key}] = (p.abs() > thresh).float()


if __name__ == "__main__":
    pruner = Pruner({{"a": torch.randn(4, 4), "b": torch.randn(8, 4)}})
    update = torch.compile(pruner.update, backend="eager")
    for step in range(4):
        update(0.5)
"""

test_check, test_dynamo = script_case_tests({
    "keys-it-holds": (PRUNER.format(key=""), [], 0),
    "keys-made-anew": (PRUNER.format(key=' + "_m"'), [12], 1),
}, "DYN203")
