"""The pytest plugin (registered through ``pytest11``): compile budgets as regression tests."""
from __future__ import annotations

from conftest import requires_torch

pytest_plugins = "pytester"

pytestmark = requires_torch

MODEL = '''
import torch
import torch.nn as nn


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return x + 1


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.calls


def clean(x, y):
    return torch.relu(x) + y


def inputs():
    return [(torch.randn(3), torch.randn(3)) for _ in range(3)]


def dynalint_inputs():
    return [((), (torch.randn(4),)) for _ in range(3)]
'''

TESTS = '''
import pytest


def test_within_budget(compile_budget):
    m = compile_budget("model.py::Branchy", max_graph_breaks=1)
    assert len(m.breaks) == 1 and m.outputs_equal


def test_over_budget(compile_budget):
    compile_budget("model.py::Branchy", max_graph_breaks=0)


@pytest.mark.compile_budget("model.py::Counter", max_recompiles=0)
def test_marker_recompiles():
    pass


def test_objects_as_targets(compile_budget):
    from model import clean, inputs

    m = compile_budget(clean, inputs=inputs)
    assert not m.breaks and not m.recompiles and m.n_calls == 3
'''


def test_compile_budget_fixture_and_marker(pytester):
    pytester.makepyfile(model=MODEL, test_model=TESTS)
    result = pytester.runpytest_inprocess("-p", "no:logging", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines([
        "*model.py::Branchy: 1 graph break(s), at most 0 allowed:*",
        "*model.py:7 in forward: Data-dependent branching (GB0170)*",
        "*if x.sum() > 0:*",
        "*model.py::Counter: 2 recompile(s), at most 0 allowed:*",
        "*call 1: forward: attribute: self.calls == 0*",
    ])
    assert "Traceback" not in result.stdout.str()
