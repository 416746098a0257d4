"""A base's public method that calls methods a subclass overrides (``integrate`` calling ``self._before``
and ``self._advance``) runs the overrides on the subclass's instance: ``_advance`` then sees the state
``_before`` stored. The default scope analyses that run; ``scope = "all"``, which analyses every function,
analyses it too, so the override's break on that state is found under both (measured with real Dynamo,
torch 2.13)."""
from __future__ import annotations

import os
import sys

import pytest

from conftest import requires_torch
from dynalint.config.settings import Scope, Settings
from dynalint.engine.runner import check_files

BASE = '''
import torch


class Stepper:
    def _before(self, t):
        pass

    def _advance(self, next_t):
        raise NotImplementedError

    def integrate(self, t: torch.Tensor):
        self._before(t)
        out = []
        for i in range(1, len(t)):
            out.append(self._advance(t[i]))
        return torch.stack(out)
'''

SOLVER = '''
import collections

import torch

from steppers.base import Stepper

State = collections.namedtuple("State", "t0, t1")


class Tracked(Stepper):
    def _before(self, t):
        self.state = State(t[0], t[0])

    def _advance(self, next_t):
        while next_t > self.state.t1:
            self.state = State(self.state.t1, self.state.t1 + 0.5)
        return torch.relu(self.state.t1)
'''


@pytest.fixture
def package(tmp_path):
    pkg = tmp_path / "steppers"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(BASE.lstrip())
    (pkg / "solver.py").write_text(SOLVER.lstrip())
    return {name: str(pkg / f"{name}.py") for name in ("base", "solver")}


def _while_line(path: str) -> int:
    with open(path) as fh:
        return next(i for i, line in enumerate(fh, 1) if "while next_t" in line)


@pytest.mark.parametrize("scope", [Scope.AUTO, Scope.ALL])
def test_the_override_breaks_on_the_state_the_base_method_sets(package, scope) -> None:
    results = list(check_files(list(package.values()), Settings(scope=scope)))
    assert all(r.error is None for r in results), [r.error for r in results]
    flagged = {d.line for r in results for d in r.diagnostics
               if d.path == package["solver"] and d.kind == "graph-break"}
    assert flagged == {_while_line(package["solver"])}


@requires_torch
def test_the_override_breaks_under_dynamo(package) -> None:
    import torch

    from dynalint.verify.probe import observe

    sys.path.insert(0, os.path.dirname(os.path.dirname(package["base"])))
    try:
        from steppers.solver import Tracked

        obs = observe(Tracked().integrate, [(torch.tensor([0.0, 1.0, 2.0]),)],
                      files_of_interest=list(package.values()))
    finally:
        sys.path.pop(0)
        for name in [m for m in sys.modules if m == "steppers" or m.startswith("steppers.")]:
            del sys.modules[name]
    assert not obs.errors, obs.errors
    assert obs.break_lines(package["solver"]) == {_while_line(package["solver"])}
    assert obs.break_lines(package["base"]) == set()
