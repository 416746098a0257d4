"""A decorator of the checked code that returns a function of its own in place of the one it decorates
(``@functools.wraps(func) def wrapper(*args, **kwargs): ...; return wrapper``) puts that wrapper in front of
the compiled code: Dynamo runs the wrapper, so a break in it is a break of the compiled function.  The
wrapper of a ``forward``, of a function handed to ``torch.compile`` (below the compiling decorator only) and
of a helper that compiled code calls is analysed as compiled code, in the decorator's own module; a decorator
that returns the function itself, a wrapper that only calls it, and a wrapper put around the compiled
function from outside stay silent.  Each case is also run under real Dynamo."""
from __future__ import annotations

import os
import sys

import pytest

from conftest import requires_torch
from dynalint.config.settings import Settings
from dynalint.engine.runner import check_files
from helpers import break_lines, dynamo_break_lines, marked_case_tests, marked_lines

CASES = [
    ("wrappers-of-a-forward-and-of-helpers", """
    import functools

    import torch


    def noisy(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            print("calling")  # breaks
            return func(*args, **kwargs)

        return wrapper


    def passthrough(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)

        return wrapper


    def same(func):
        return func


    def logged(name):
        def decorate(func):
            def wrapper(self, x):
                print(name)  # breaks
                return func(self, x)

            return wrapper

        return decorate


    @noisy
    def helper(x):
        return x + 1


    @passthrough
    @same
    def quiet(x):
        return x * 2


    class M(torch.nn.Module):
        @logged("m")
        def forward(self, x):
            return x - 1


    m = M()


    def f(x):
        return helper(x) + quiet(x) + m(x)
    """, "f", "[(torch.ones(3),)]"),
]

test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)

AROUND_COMPILE = """
import functools

import torch


def noisy(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        print("calling")
        return func(*args, **kwargs)

    return wrapper


def counted(func):
    @functools.wraps(func)
    def wrapper(x):
        print("counted")  # breaks
        return func(x)

    return wrapper


@noisy
@torch.compile(backend="eager")
def outside(x):
    return x + 1


@torch.compile(backend="eager")
@counted
def inside(x):
    return x * 2


def main(x):
    return outside(x) + inside(x)
"""


def test_only_the_wrappers_below_the_compiling_decorator_are_compiled() -> None:
    assert break_lines(AROUND_COMPILE) == marked_lines(AROUND_COMPILE)


@requires_torch
def test_those_lines_are_dynamos(tmp_path) -> None:
    assert dynamo_break_lines(tmp_path, AROUND_COMPILE, "[(torch.ones(3),)]") == marked_lines(AROUND_COMPILE)


# a package whose decorator, in a module of its own, installs state under a lock on the first call
UTILS = '''
import functools
import threading

_lock = threading.Lock()


def install(model):
    if getattr(model, "_installed", False):
        return
    with _lock:
        model._installed = True


def capture(func):
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        install(self)
        return func(self, *args, **kwargs)

    return wrapper


def quiet(func=None, *, flag=True):
    def decorate(func):
        @functools.wraps(func)
        def wrapper(self, *args, **kwargs):
            return func(self, *args, **kwargs)

        return wrapper

    return decorate(func) if func is not None else decorate
'''

MODEL = '''
import torch
from wrapped.utils import capture, quiet


class Net(torch.nn.Module):
    @quiet(flag=False)
    @capture
    def forward(self, x):
        return x * 2


def main(x):
    return torch.compile(Net(), backend="eager")(x)
'''


@pytest.fixture
def package(tmp_path):
    pkg = tmp_path / "wrapped"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in (("utils", UTILS), ("model", MODEL)):
        (pkg / f"{name}.py").write_text(text.lstrip())
    return {name: str(pkg / f"{name}.py") for name in ("utils", "model")}


def _line(path: str, text: str) -> int:
    with open(path) as fh:
        return next(i for i, line in enumerate(fh, 1) if text in line)


def test_a_wrapper_of_another_module_is_reported_in_its_module(package) -> None:
    results = list(check_files(list(package.values()), Settings()))
    assert all(r.error is None for r in results), [r.error for r in results]
    found = {(os.path.basename(d.path), d.line) for r in results for d in r.diagnostics if d.kind == "graph-break"}
    assert found == {("utils.py", _line(package["utils"], "with _lock:"))}


def test_the_decorators_module_alone_does_not_know_what_it_decorates(package) -> None:
    [result] = check_files([package["utils"]], Settings())
    assert [d for d in result.diagnostics if d.kind == "graph-break"] == []


@requires_torch
def test_that_line_is_dynamos(package) -> None:
    import torch

    from dynalint.verify.probe import observe

    sys.path.insert(0, os.path.dirname(os.path.dirname(package["utils"])))
    try:
        from wrapped.model import Net

        obs = observe(Net(), [(torch.ones(3),)], files_of_interest=list(package.values()))
        assert not obs.errors, obs.errors
        assert obs.break_lines(package["utils"]) == {_line(package["utils"], "with _lock:")}
        assert obs.break_lines(package["model"]) == set()
    finally:
        sys.path.remove(os.path.dirname(os.path.dirname(package["utils"])))
        for name in [m for m in sys.modules if m == "wrapped" or m.startswith("wrapped.")]:
            del sys.modules[name]
