"""``assert value`` where Dynamo turns the assert into ``torch._assert(value)`` (no message, or a constant one):
a module, an object, or a list or tuple (a ``NamedTuple`` too) of them or of tensors cannot go into the graph,
so the graph breaks there and the rest of the function runs eagerly; a constant (a dict or tuple of numbers, a
shape, a string, a ``NamedTuple`` of numbers) and a computed message, which keeps the assert a plain branch, do
not break.  Each case is also run under real Dynamo."""
from __future__ import annotations

from helpers import marked_case_tests

CASES = [
    ("modules-and-objects", """
    import torch
    import torch.nn as nn


    class Tagged:
        pass


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Identity()])
            self.extra = [nn.ReLU()]

        def forward(self, x):
            assert self.layers  # breaks
            assert self.extra, "runs eagerly after the break above"
            return x * 2


    net = Net()
    tags = (Tagged(), Tagged())


    def f(x):
        assert tags  # breaks
        return net(x)
    """, "f", "[(torch.ones(3),)]"),
    ("tensors-in-a-tuple", """
    import torch


    def f(x):
        y = x + 1
        assert (x, y), "both"  # breaks
        return y
    """, "f", "[(torch.ones(3),)]"),
    ("named-tuples", """
    import typing

    import torch


    class Pair(typing.NamedTuple):
        a: object
        b: object


    ints = Pair(1, 2)


    def f(x):
        assert ints
        both = Pair(x, x + 1)
        assert both  # breaks
        return both.a
    """, "f", "[(torch.ones(3),)]"),
    ("constants-and-computed-messages", """
    import torch
    import torch.nn as nn

    mods = [nn.Identity(), nn.ReLU()]
    cfg = {"a": 1}


    def f(x):
        assert cfg
        assert (1, 2)
        assert x.shape
        assert "name"
        assert mods, f"{len(mods)} modules"
        assert len(mods) > 0
        return x * 2
    """, "f", "[(torch.ones(3),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)
