"""``isinstance(x, torch.Tensor)`` decides, while Dynamo traces, what ``x`` is on each side of the test: a
tensor where it holds, no tensor where it fails, whatever the analysis took ``x`` for (an untyped
parameter, a ``float | Tensor`` argument).  A comparison of ``x`` on the failing side is a Python one and
does not break; on the holding side it still does.  A value known to be a tensor (``isinstance(data,
torch.Tensor)`` held before) keeps its value where the test fails, a side that never runs.  Each case is also
run under real Dynamo.

``isinstance(m, C)`` with ``C`` a module class of the checked code that defines ``forward`` (what an
annotation ``m: C`` promises) makes ``m`` an instance of ``C`` where it holds: a loop over ``model.modules()``
(or a generator yielding what such a test let through) reads ``C``'s buffers, so ``float(m.max_val)`` breaks
there. A value known to be of another class is not narrowed: Dynamo decides the test while tracing, and the
code under it never runs."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("the-failing-side-is-python", """
    from typing import Union

    import torch


    def luts(histos, clip):
        if isinstance(clip, torch.Tensor):
            histos = histos * clip
        elif clip > 0.0:
            histos = histos + 1
        if not isinstance(clip, torch.Tensor) and clip < 1.0:
            histos = histos - 1
        return histos


    def limits(histos, clip: Union[float, torch.Tensor]):
        if not isinstance(clip, torch.Tensor):
            return histos.clamp(max=clip) if clip > 0 else histos
        if clip.sum() > 0:  # breaks
            histos = histos.clamp(max=clip)
        return histos


    def f(x, clip):
        return luts(x, clip) + limits(x, clip)
    """, "f", "[(torch.ones(3), 0.5), (torch.ones(3), torch.tensor(0.5)), (torch.ones(3), 2.0)]"),
    ("a-known-tensor-keeps-its-value", """
    from typing import Any

    import numpy as np
    import torch


    class MetaTensor(torch.Tensor):
        def __init__(self, x, affine=None, meta=None):
            self.affine = affine


    def convert(data: Any, track_meta: bool = False):
        def _convert(tensor: Any):
            if not isinstance(tensor, torch.Tensor):
                if isinstance(tensor, np.ndarray) and tensor.dtype == np.uint16:
                    tensor = tensor.astype(np.int32)
                tensor = torch.as_tensor(tensor)
            if track_meta and not isinstance(tensor, MetaTensor):
                return MetaTensor(tensor)  # breaks
            return tensor

        if isinstance(data, torch.Tensor):
            return _convert(data)
        return data


    def f(x):
        return convert(x, track_meta=True) + 1
    """, "f", "[(torch.ones(3),)]"),
]

OBSERVER = """
import torch
import torch.nn as nn


class Observer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("max_val", torch.zeros(()))

    def forward(self, x):
        self.max_val = torch.maximum(self.max_val, x.abs().max())
        return x
"""

CLASS_CASES = [
    ("named-modules", OBSERVER + """

def calibrate(model, x):
    model(x)
    ranges = {}
    for name, m in model.named_modules():
        if isinstance(m, Observer):
            ranges[name] = float(m.max_val)  # breaks
    return ranges
""", "calibrate", "[(nn.Sequential(Observer(), nn.Linear(4, 4), Observer()), torch.randn(2, 4))]"),
    ("a-generator-of-narrowed-modules", OBSERVER + """

def observers(model):
    for name, m in model.named_modules():
        if isinstance(m, Observer):
            yield name, m


def calibrate(model, x):
    model(x)
    ranges = {}
    for name, obs in observers(model):
        ranges[name] = float(obs.max_val)  # breaks
    return ranges
""", "calibrate", "[(nn.Sequential(Observer(), nn.Linear(4, 4)), torch.randn(2, 4))]"),
    ("a-module-of-another-class", OBSERVER + """

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("max_val", torch.ones(()))

    def forward(self, x):
        return self.lin(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
            if isinstance(block, Observer):
                x = x / float(block.max_val)
        return x
""", "Net", "[(torch.randn(2, 4),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES + CLASS_CASES)
