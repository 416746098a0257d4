"""Breaks that cross files through a method of a base class: a base's method that calls an override
breaking the graph (the override in another file), called on an object the compiled function made, breaks
at the call too ("Reconstruction failure"); a base's method that reads the ``__dict__`` of a tensor
subclass instance passed from another file breaks there, after ``isinstance(other, Base)``, which Dynamo
decides while tracing.  An override that does not break stays silent."""
from __future__ import annotations

import os
import sys

import pytest

from conftest import requires_torch
from dynalint.config.settings import Scope, Settings
from dynalint.engine.runner import check_files

BASE = '''
class Solver:
    def __init__(self, y):
        self.y = y

    def before(self, t):
        return t

    def integrate(self, t):
        t = self.before(t)
        return self.y * t


class Meta:
    def copy_from(self, other):
        first = other if isinstance(other, Meta) else self
        return len(first.__dict__)
'''

IMPL = '''
import torch
from subpkg.base import Meta, Solver


class Checked(Solver):
    def before(self, t):
        if t.sum() > 0:
            return t * 2
        return t


class Calm(Solver):
    def before(self, t):
        return t + 1


class MetaTensor(Meta, torch.Tensor):
    pass
'''

MAIN = '''
import torch
from subpkg.base import Meta
from subpkg.impl import Calm, Checked, MetaTensor


@torch.compile(backend="eager")
def solve(y, t):
    out = Checked(y).integrate(t)
    return out + 1


@torch.compile(backend="eager")
def solve_calm(y, t):
    out = Calm(y).integrate(t)
    return out + 1


@torch.compile(backend="eager")
def tracked(x: MetaTensor):
    n = Meta().copy_from(x)
    return x + n


def main(y, t):
    return solve(y, t), solve_calm(y, t), tracked(y.as_subclass(MetaTensor))
'''


@pytest.fixture
def package(tmp_path):
    pkg = tmp_path / "subpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in (("base", BASE), ("impl", IMPL), ("main", MAIN)):
        (pkg / f"{name}.py").write_text(text.lstrip())
    return {name: str(pkg / f"{name}.py") for name in ("base", "impl", "main")}


def _line(path: str, text: str) -> int:
    with open(path) as fh:
        return next(i for i, line in enumerate(fh, 1) if text in line)


def _flagged(paths: dict[str, str], settings: Settings = Settings()) -> dict[str, set[tuple[int, str]]]:
    results = list(check_files(list(paths.values()), settings))
    assert all(r.error is None for r in results), [r.error for r in results]
    names = {path: name for name, path in paths.items()}
    out: dict[str, set[tuple[int, str]]] = {name: set() for name in paths}
    for r in results:
        for d in r.diagnostics:
            if d.kind == "graph-break":
                out[names[d.path]].add((d.line, d.code))
    return out


@pytest.mark.parametrize("scope", [Scope.AUTO, Scope.ALL])
def test_breaks_through_a_base_method_of_another_file(package, scope):
    found = _flagged(package, Settings(scope=scope))
    main = {line for line, _ in found["main"]}
    # the override breaks inside `integrate`, of another file: the call on the fresh object breaks
    assert (_line(package["main"], "out = Checked(y).integrate(t)"), "DYN105") in found["main"]
    assert _line(package["main"], "out = Calm(y).integrate(t)") not in main
    # `copy_from` reads the `__dict__` of the tensor subclass instance it was given
    assert (_line(package["base"], "return len(first.__dict__)"), "DYN105") in found["base"]
    assert _line(package["main"], "n = Meta().copy_from(x)") in main
    assert main == {_line(package["main"], "out = Checked(y).integrate(t)"),
                    _line(package["main"], "n = Meta().copy_from(x)")}


@requires_torch
def test_those_lines_are_dynamos(package):
    import torch

    from dynalint.verify.probe import observe

    src = os.path.dirname(os.path.dirname(package["base"]))
    sys.path.insert(0, src)
    try:
        from subpkg.main import main

        obs = observe(main, [(torch.ones(3), torch.ones(3))], files_of_interest=list(package.values()))
        assert not obs.errors, obs.errors
    finally:
        sys.path.remove(src)
        for name in [m for m in sys.modules if m.startswith("subpkg")]:
            del sys.modules[name]
    found = _flagged(package)
    for name, path in package.items():
        assert {line for line, _ in found[name]} == obs.break_lines(path), name


def test_a_tensor_subclass_instance_keeps_its_class_between_files(package):
    from dynalint.analysis.module_index import ClassInfo
    from dynalint.analysis.project import SourceIndex, decode_value, encode_value, join_encoded
    from dynalint.analysis.values import tensor
    from dynalint.engine.cache_entry import valid_entry

    project = SourceIndex(package.values())
    idx = project.load("subpkg.impl")
    assert idx is not None
    cls = idx.classes["MetaTensor"]
    assert isinstance(cls, ClassInfo)
    code = encode_value(tensor().with_(cls=cls))
    assert decode_value(code, project).cls is cls
    # a cache entry holding it is read back
    assert valid_entry({"diagnostics": [], "outgoing": {package["base"]: {"Meta.copy_from": {"other": code}}},
                        "deps": {}, "names": [], "view": ""})
    # joined with a plain tensor, it is only a tensor
    joined = join_encoded(code, encode_value(tensor()))
    assert decode_value(joined, project).cls is None and decode_value(joined, project).is_tensor
