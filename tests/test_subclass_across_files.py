"""A method inherited across files runs the subclass's overrides: the lines of the base's file that
those overrides break are found by the analysis of the base's file, run on the subclass's instance.

On Python 3.11 a comprehension over ``zip`` whose body calls an override that breaks the graph breaks
at the comprehension, in the base's file (Dynamo compiles its frame on its own and cannot step the
``zip``); the direct call of the override breaks only inside the override."""
from __future__ import annotations

import os
import sys
import textwrap

import pytest

from conftest import requires_torch
from dynalint.config.settings import Scope, Settings
from dynalint.engine.runner import check_files

BASES = '''
import torch
from torch import nn


class Base(nn.Module):
    def hook(self, x):
        return x + 1

    def forward(self, xs, ws):
        ys = [self.hook(x) * w for x, w in zip(xs, ws)]
        z = self.hook(ys[0])
        return z * 2


class Other(nn.Module):
    def hook(self, x):
        return x + 1

    def forward(self, xs, ws):
        ys = [self.hook(x) * w for x, w in zip(xs, ws)]
        return ys[0]


class Stepper:
    def update(self, x):
        return x

    def step(self, xs, ws):
        return [torch.relu(self.update(x)) * w for x, w in zip(xs, ws)]

    def walk(self, xs, ws):
        return [torch.relu(self.update(x)) + w for x, w in zip(xs, ws)]
'''

SUBCLASSES = '''
import torch
from subpkg.bases import Base, Other, Stepper


class Sub(Base):
    def hook(self, x):
        if x.sum() > 0:
            return x - 1
        return x + 2


class Quiet(Other):
    def hook(self, x):
        return x * 3


class Loud(Stepper):
    def update(self, x):
        if x.sum() > 0:
            return x - 1
        return x


def main():
    stepper = Loud()
    return torch.compile(stepper.step)
'''


@pytest.fixture
def package(tmp_path):
    pkg = tmp_path / "subpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bases.py").write_text(BASES.lstrip())
    (pkg / "subclasses.py").write_text(SUBCLASSES.lstrip())
    return {name: str(pkg / f"{name}.py") for name in ("bases", "subclasses")}


def _line(path: str, text: str, nth: int = 0) -> int:
    with open(path) as fh:
        return [i for i, line in enumerate(fh, 1) if text in line][nth]


def _flagged(paths: dict[str, str], name: str, settings: Settings = Settings()) -> set[tuple[int, str]]:
    results = list(check_files(list(paths.values()), settings))
    assert all(r.error is None for r in results), [r.error for r in results]
    return {(d.line, d.code) for r in results for d in r.diagnostics
            if d.path == paths[name] and d.kind == "graph-break"}


@pytest.mark.parametrize("scope", [Scope.AUTO, Scope.ALL])
def test_the_base_file_reports_the_comprehension_an_override_breaks(package, scope):
    bases = _flagged(package, "bases", Settings(scope=scope))
    # Sub (a module of the other file) breaks in `hook`: Base.forward's comprehension breaks; Quiet's
    # override does not break, so Other.forward's comprehension stays silent
    assert (_line(package["bases"], "ys = [self.hook(x) * w", 0), "DYN105") in bases
    assert not any(line == _line(package["bases"], "ys = [self.hook(x) * w", 1) for line, _ in bases)
    # the direct call breaks inside the override, not at the call
    assert not any(line == _line(package["bases"], "z = self.hook(ys[0])") for line, _ in bases)
    assert (_line(package["subclasses"], "if x.sum() > 0", 0), "DYN101") in _flagged(package, "subclasses")
    # checked alone, the base's file knows no subclass that breaks
    assert _flagged({"bases": package["bases"]}, "bases", Settings(scope=scope)) == set()


def test_only_the_method_handed_to_torch_compile_runs_on_the_subclass(package):
    bases = _flagged(package, "bases")
    # `torch.compile(stepper.step)` on a Loud: step's comprehension breaks; walk is never compiled
    assert (_line(package["bases"], "return [torch.relu(self.update(x)) * w"), "DYN105") in bases
    assert not any(line == _line(package["bases"], "return [torch.relu(self.update(x)) + w") for line, _ in bases)


@requires_torch
def test_subclass_breaks_match_dynamo(package):
    import torch

    from dynalint.verify.probe import observe

    src = os.path.dirname(os.path.dirname(package["bases"]))
    sys.path.insert(0, src)
    try:
        from subpkg.subclasses import Loud, Sub

        xs = [torch.rand(3) + 0.1, torch.rand(3) + 0.1]
        ws = [torch.rand(3), torch.rand(3)]
        sub = Sub()
        obs = observe(lambda a, b: sub(a, b), [(xs, ws)], files_of_interest=list(package.values()))
        assert not obs.errors, obs.errors
        stepper = Loud()
        stepped = observe(stepper.step, [(xs, ws)], files_of_interest=list(package.values()))
        assert not stepped.errors, stepped.errors
        # Quiet's forward, compiled, breaks nowhere
        from subpkg.subclasses import Quiet

        quiet = Quiet()
        calm = observe(lambda a, b: quiet(a, b), [(xs, ws)], files_of_interest=list(package.values()))
        assert not calm.errors and not calm.break_lines()
    finally:
        sys.path.remove(src)
        for name in [m for m in sys.modules if m.startswith("subpkg")]:
            del sys.modules[name]
    flagged = {line for line, _ in _flagged(package, "bases")}
    assert flagged == obs.break_lines(package["bases"]) | stepped.break_lines(package["bases"])
    assert {line for line, _ in _flagged(package, "subclasses")} == obs.break_lines(package["subclasses"]) \
        | stepped.break_lines(package["subclasses"])
