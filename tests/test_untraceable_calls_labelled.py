"""Calls and stores Dynamo skips or cannot put in a graph, beyond logging and printing: each case is
labelled by running it through Dynamo (torch 2.13), and the analysis must report exactly those lines."""
from __future__ import annotations

import pytest

from conftest import requires_torch
from test_labelled_cases import Case

from helpers import check, run_example_under_dynamo

CASES = [
    Case("generator-argument", """
        import torch

        GEN = torch.Generator()

        @torch.compile
        def noisy(x):
            keep = torch.bernoulli(x.sigmoid(), generator=GEN)
            return x * keep + torch.rand(x.shape, generator=None)
    """, "[(torch.randn(4),)]", {7: "DYN105"}),
    Case("generator-made-in-the-graph", """
        import torch

        @torch.compile
        def noisy(x):
            gen = torch.Generator()
            return x + torch.rand(x.shape, generator=gen)
    """, "[(torch.randn(4),)]", {5: "DYN105", 6: "DYN105"}),
    Case("rnn-flatten-parameters", """
        import torch
        from torch import nn

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(3, 3)
                self.rnn = nn.GRU(3, 3)

            def forward(self, x):
                self.rnn.flatten_parameters()
                return self.proj(x)
    """, "[(torch.randn(2, 3),)]", {11: "DYN105"}, target="Encoder"),
    Case("shared-memory-and-environment", """
        import os
        import torch

        @torch.compile
        def publish(x):
            y = x * 2
            y.share_memory_()
            os.environ["STEP_DONE"] = "1"
            return y + 1
    """, "[(torch.randn(4),)]", {7: "DYN105", 8: "DYN105"}),
    Case("sorted-tensors", """
        import torch

        @torch.compile
        def smallest(x):
            by_size = sorted([x, x * 2], key=lambda t: t.shape[0])[0]
            return sorted([x.sum(), x.max()])[0] + by_size
    """, "[(torch.randn(4),)]", {6: "DYN105"}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_dynalint_predicts_labels(case: Case) -> None:
    found = {d.line: d.code for d in check(case.code) if d.kind == "graph-break"}
    assert found == case.breaks


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_labels_match_dynamo(case: Case, tmp_path) -> None:
    obs, module = run_example_under_dynamo(case.example, tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines(module.__file__) == set(case.breaks) | case.unpredicted, \
        [(b.line, b.gb_type) for b in obs.breaks]
