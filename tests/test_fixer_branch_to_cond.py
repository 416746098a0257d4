"""branch-to-cond refuses what ``torch.cond`` cannot run as the original did - a branch Dynamo cannot
capture whole (it raises where the original only broke the graph), a tensor or parameter read by one
branch only (its gradient would be zero instead of None) - and what it accepts runs under real Dynamo
(torch 2.13, backend ``eager``) with the original's outputs and gradients."""
from __future__ import annotations

import textwrap

import pytest

from conftest import requires_torch
from dynalint.analysis.program import Scope
from dynalint.engine.fixing import fix_source
from dynalint.config.settings import Settings

HEADER = "import torch\nimport torch.nn as nn\n\n\n"

MASKED = HEADER + textwrap.dedent("""
    class M(nn.Module):
        def forward(self, x):
            mask = x > 0
            if mask.any():
                y = x * x[mask].max()
            else:
                y = x * 2
            return y
""")

SHARED = HEADER + textwrap.dedent("""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            if x.sum() > 0:
                h = self.fc(x)
                y = torch.relu(h)
            else:
                y = self.fc(x) * 2
            return y + 1
""")


def _fix(source: str):
    return fix_source(source, "m.py", Settings(scope=Scope.ALL), unsafe=True)


def _refusal(source: str) -> str:
    result = _fix(source)
    assert "branch-to-cond" not in {a.fixer for a in result.applied}, result.source
    reasons = [r.reason for r in result.refused if r.fixer == "branch-to-cond"]
    assert reasons, result.refused
    return reasons[0]


@pytest.mark.parametrize("body", [
    "y = x * x[mask].max()",
    "y = x * torch.nonzero(x).float().sum()",
    "y = x * x.unique().sum()",
    "y = x * torch.masked_select(x, mask).sum()",
])
def test_a_branch_dynamo_cannot_capture_whole_is_refused(body):
    source = MASKED.replace("y = x * x[mask].max()", body)
    assert "UncapturedHigherOrderOpError" in _refusal(source)


def test_an_index_that_may_be_a_mask_is_refused():
    """``x[m]`` with ``m`` an argument the analysis cannot type: a mask would give a data-dependent shape."""
    source = MASKED.replace("def forward(self, x):\n        mask = x > 0", "def forward(self, x, mask):")
    assert "may have a data-dependent shape" in _refusal(source)


@pytest.mark.parametrize("source, read", [
    (HEADER + textwrap.dedent("""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(4, 4)
                self.b = nn.Linear(4, 4)

            def forward(self, x):
                if x.sum() > 0:
                    y = self.a(x)
                else:
                    y = self.b(x) * 2
                return y
    """), "self.a"),
    (HEADER + textwrap.dedent("""
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                if x.abs().max() > 1:
                    return self.fc(x) + x
                return x
    """), "self.fc"),
    (HEADER + textwrap.dedent("""
        class M(nn.Module):
            def forward(self, x, d):
                if d.abs() > 0:
                    y = x / d
                else:
                    y = x * 0.0
                return y
    """), "d"),
])
def test_what_one_branch_only_reads_is_refused(source, read):
    """Its gradient would be zero where the original left it None (measured: ``b.weight.grad`` is None after
    the eager original took the other branch, all zeros after the compiled ``torch.cond``)."""
    reason = _refusal(source)
    assert f"`{read}` is read by one branch only" in reason and "zero gradient instead of None" in reason


@requires_torch
def test_the_masked_branch_is_refused_and_compiles_as_it_was():
    """Refused: the original breaks the graph but runs under Dynamo, where its ``torch.cond`` rewrite
    raised ``UncapturedHigherOrderOpError`` on the first call."""
    import torch

    assert "UncapturedHigherOrderOpError" in _refusal(MASKED)
    module = _load(MASKED)
    x = torch.randn(4)
    assert torch.equal(module.M()(x), torch.compile(module.M(), backend="eager")(x))


@requires_torch
def test_an_accepted_branch_runs_under_dynamo_with_the_original_outputs_and_gradients():
    import torch

    result = _fix(SHARED)
    assert [a.fixer for a in result.applied] == ["branch-to-cond"], result.refused
    assert "torch.cond(" in result.source
    before, after = _load(SHARED), _load(result.source)
    for x in (torch.randn(4) + 2, -torch.rand(4) - 1):
        torch.manual_seed(0)
        original = before.M()
        torch.manual_seed(0)
        rewritten = after.M()
        compiled = torch.compile(rewritten, backend="eager", fullgraph=True)  # one graph: no break, no error
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        out_a, out_b = original(xa), compiled(xb)
        assert torch.allclose(out_a, out_b)
        out_a.sum().backward()
        out_b.sum().backward()
        assert torch.allclose(xa.grad, xb.grad)
        for (name, p), q in zip(original.named_parameters(), rewritten.parameters()):
            assert (p.grad is None) == (q.grad is None), name
            assert p.grad is None or torch.allclose(p.grad, q.grad), name


def _load(source: str):
    import types

    module = types.ModuleType("m")
    exec(compile(source, "m.py", "exec"), module.__dict__)  # noqa: S102 - the sources are ours
    return module
