"""DYN206 on an optional argument that one call leaves ``None`` and another passes an object of a class of the
checked code (a cache, a state): the first call guards on ``cache is None``, which the second fails (measured
on torch 2.13: one recompile). Two calls that both pass an object compile one graph."""
from __future__ import annotations

from helpers import check, script_case_tests

SCRIPT = """\
import torch
import torch.nn as nn


class Cache:
    def __init__(self):
        self.seen = 0


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, cache=None):
        offset = cache.seen if cache is not None else 0
        return self.lin(x) + offset


if __name__ == "__main__":
    cm = torch.compile(Decoder(), backend="eager")
    cm(torch.randn(2, 4))
    cm(torch.randn(2, 4), Cache())
"""
CASES = {"none-then-an-object": (SCRIPT, [15], 1),
         "an-object-each-time": (SCRIPT.replace("    cm(torch.randn(2, 4))\n",
                                                "    cm(torch.randn(2, 4), Cache())\n"), [], 0)}

test_check, test_dynamo = script_case_tests(CASES, "DYN206")


def test_the_message_names_the_object() -> None:
    [found] = [d for d in check(SCRIPT) if d.code == "DYN206"]
    assert "passes a `Cache`" in found.message and "one for the object" in found.message
