"""DYN204's parts that follow data the calls draw afresh (a size or string taken from data at a break,
a number or size a frame Dynamo runs eagerly hands a function of the project) read what they share
once per check of a module: the functions whose calls draw fresh data (``fresh_data_functions``), and
whether a function of the project has a graph (``FrameGraphs``, which finds another module's breaks),
however many parts ask; and their findings stay those of each part."""
from __future__ import annotations

import pytest

from helpers import check, marked_lines
from dynalint.rules import scalar_crosses_break

SOURCE = """
    import torch


    def scaled(h, p):  # DYN204
        return h * p[1]


    def step(x):
        h = x * 1
        for _ in range(2):
            torch._dynamo.graph_break()
            h = h + 1
        n = (x > 0).nonzero().shape[0]
        return scaled(h, (h, n))


    def counted(x):
        n = (x > 0).nonzero().shape[0]  # DYN204
        return x * n


    def stringed(x):
        n = (x > 0).sum()
        print("value " + str(n))  # DYN204
        return x * 2


    def run_step():
        f = torch.compile(step, backend="eager")
        for _ in range(3):
            f(torch.randn(8))


    def run_counted():
        f = torch.compile(counted, backend="eager")
        for _ in range(3):
            f(torch.randn(8))


    def run_stringed():
        f = torch.compile(stringed, backend="eager")
        for _ in range(3):
            f(torch.randn(8))
"""
"""``scaled`` is handed the size of ``step``'s ``nonzero`` by a frame run eagerly, ``counted``'s resumed
frame is guarded on a size from data, ``stringed``'s on the text of a tensor: three parts of the rule,
each asking which functions draw fresh data, two asking which functions have a graph."""


@pytest.fixture
def asked(monkeypatch) -> dict[str, int]:
    """How many times one check computes the functions drawing fresh data and makes a ``FrameGraphs``."""
    counts = {"fresh": 0, "graphs": 0}
    fresh = scalar_crosses_break.fresh_data_functions

    def counted_fresh(program):
        counts["fresh"] += 1
        return fresh(program)

    class CountedGraphs(scalar_crosses_break.FrameGraphs):
        def __init__(self, *args) -> None:
            counts["graphs"] += 1
            super().__init__(*args)

    monkeypatch.setattr(scalar_crosses_break, "fresh_data_functions", counted_fresh)
    monkeypatch.setattr(scalar_crosses_break, "FrameGraphs", CountedGraphs)
    return counts


def test_the_parts_share_one_fresh_data_set_and_one_frame_graphs(asked):
    found = {d.line for d in check(SOURCE) if d.code == "DYN204"}
    assert found == marked_lines(SOURCE, "DYN204")
    assert asked == {"fresh": 1, "graphs": 1}


def test_no_part_asks_without_a_finding_to_look_for(asked):
    code = """
        import torch


        @torch.compile
        def f(x):
            return x * 2
    """
    assert not [d for d in check(code) if d.code == "DYN204"]
    assert asked["fresh"] == 0
