"""``itertools`` that take the truth of each element (``takewhile``'s predicate, ``compress``'s selectors) on
tensors break as ``filter`` does (DYN101, "Data-dependent branching" in Dynamo's polyfills), and a
``collections.Counter`` kept on a module is a dict whose keys compiled code adds (DYN203, as a plain dict's:
Dynamo guards ``len(self.usage)``).  The breaks are run under real Dynamo (torch 2.13) too."""
from __future__ import annotations

from helpers import break_tests, check

TAKEWHILE = """
import itertools

import torch


def leading_active(signal, floor=0.2):
    windows = (signal[..., i:i + 8] for i in range(0, signal.shape[-1] - 7, 4))
    active = list(itertools.takewhile(lambda w: w.std() > floor, windows))
    return torch.stack(active).mean(0) if active else signal[..., :8]


def main(x):
    return torch.compile(leading_active, backend="eager")(x)
"""

test_check_takewhile, test_dynamo_takewhile = break_tests(TAKEWHILE, {(8, "DYN101")},
                                                          "[(torch.randn(1, 4, 32),)]")


def test_check_compress():
    code = """
    import itertools

    import torch


    @torch.compile
    def loud_channels(signal, thresh=0.5):
        energy = signal.pow(2).mean(-1)
        keep = list(itertools.compress(range(signal.shape[0]), energy > thresh))
        return signal[keep]
    """
    assert [(d.line, d.code) for d in check(code)] == [(9, "DYN101")]


COUNTER = """\
from collections import Counter

import torch
import torch.nn as nn


class Codebook(nn.Module):
    def __init__(self):
        super().__init__()
        self.usage = Counter()

    def forward(self, x, code: str):
        self.usage.update([code])
        return x * 2


if __name__ == "__main__":
    m = torch.compile(Codebook(), backend="eager")
    for code in ("a", "b", "c"):
        m(torch.randn(4, 8), code)
"""



def test_check_counter():
    found = [d for d in check(COUNTER) if d.code == "DYN203"]
    assert [d.line for d in found] == [13] and "adds keys to" in found[0].message
