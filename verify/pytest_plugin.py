"""pytest plugin: keep "this model compiles with at most N graph breaks and no recompile" as a regression test.

Fixture::

    def test_model_compiles(compile_budget):
        compile_budget("model.py::Net", inputs="model.py::make_inputs", max_graph_breaks=0, max_recompiles=0)

Marker (the budget is checked before the test body runs)::

    @pytest.mark.compile_budget("model.py::Net", max_graph_breaks=1)
    def test_net(): ...

Targets and factories are ``FILE::NAME`` strings (a relative FILE is looked up
next to the test file, then from the rootdir, then from the current directory;
``inputs``/``before_call`` may also be lists of ``[TARGET=]FILE::NAME``) or the
top-level objects themselves.  The measurement is ``dynalint verify``'s: a worker process, real
Dynamo, the whole input stream.  When the budget is exceeded the test fails
with the break reasons and the guards that failed.  Loaded for every pytest
session where dynalint is installed, so it imports nothing heavy until used.
"""
from __future__ import annotations

import inspect
import os
from typing import Any, Callable

import pytest

MARKER = "compile_budget"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(target, inputs=None, max_graph_breaks=0, max_recompiles=0, device='cpu', "
                   "mode='eval', backend='eager', timeout=300): fail unless the target compiles within the budget "
                   "over its input stream (dynalint verify)")


def _ref(obj: Any, base_dirs: list[str], what: str) -> Any:
    """``FILE::NAME`` with a relative FILE made absolute: the first of ``base_dirs`` (the test file's
    folder, the rootdir, the current directory) that has it.  A ``TARGET=FILE::NAME`` entry keeps its
    ``TARGET=``, a list resolves each entry, an object becomes the ``FILE::NAME`` it is defined at."""
    if obj is None:
        return None
    if isinstance(obj, (list, tuple)):
        return [_ref(o, base_dirs, what) for o in obj]
    if isinstance(obj, str):
        key, eq, rest = obj.partition("=")
        if eq and (key.isidentifier() or "::" in key):  # as verify.api reads [TARGET=]FILE::NAME
            return f"{_ref(key, base_dirs, what) if '::' in key else key}={_ref(rest, base_dirs, what)}"
        path, sep, name = obj.rpartition("::")
        if sep and path and not os.path.isabs(path):
            for base in base_dirs:
                candidate = os.path.join(base, path)
                if os.path.isfile(candidate):
                    return f"{candidate}::{name}"
        return obj
    target = inspect.unwrap(getattr(obj, "_torchdynamo_orig_callable", obj))
    try:
        source_file = inspect.getsourcefile(target)
    except TypeError:
        source_file = None
    name = getattr(target, "__qualname__", "")
    if not source_file or not name.isidentifier():
        raise pytest.UsageError(f"{what} {obj!r} is not a top-level function or class of a file: "
                                "pass it as 'FILE::NAME'")
    return f"{source_file}::{name}"


def describe_failure(m: Any, max_graph_breaks: int, max_recompiles: int) -> list[str]:
    """Why a measurement exceeds the budget (empty when it does not)."""
    lines = []
    if m.status != "ok":
        lines.append(f"{m.target}: {m.status}: {m.message}")
        if m.traceback:
            lines.append(m.traceback)
        return lines
    if len(m.breaks) > max_graph_breaks:
        lines.append(f"{m.target}: {len(m.breaks)} graph break(s), at most {max_graph_breaks} allowed:")
        lines += [f"  {b.file}:{b.line} in {b.function}: {b.gb_type}{' (' + b.gb_id + ')' if b.gb_id else ''}"
                  f"{': ' + b.explanation if b.explanation else ''}\n    {b.code}" for b in m.breaks]
    if len(m.recompiles) > max_recompiles:
        lines.append(f"{m.target}: {len(m.recompiles)} recompile(s), at most {max_recompiles} allowed:")
        lines += [f"  call {r.call}: {r.function}: {r.category}: {r.guards[0] if r.guards else '?'}"
                  for r in m.recompiles]
    if m.outputs_equal is False:
        bad = next(c for c in m.calls if c.compiled_vs_eager is not None and not c.compiled_vs_eager.equal)
        lines.append(f"{m.target}: compiled outputs differ from eager on input set {bad.index}: "
                     f"{bad.compiled_vs_eager.note}")
    return lines


def _checker(base_dirs: list[str]) -> Callable[..., Any]:
    def check(target: Any, inputs: Any = None, *, max_graph_breaks: int = 0, max_recompiles: int = 0,
              device: str = "cpu", mode: str = "eval", backend: str = "eager", timeout: float = 300.0,
              before_call: Any = None) -> Any:
        """Measure ``target`` over its input stream; fail the test when it exceeds the budget.

        Returns the measurement (``dynalint.verify.results.Measurement``) for further asserts.
        """
        from dynalint.config.settings import default_settings
        from dynalint.verify.api import Options, verify_targets
        from dynalint.verify.targets import TargetError, parse_ref

        try:
            ref = parse_ref(_ref(target, base_dirs, "target") or "")
            options = Options(inputs=_ref(inputs, base_dirs, "inputs"),
                              before_call=_ref(before_call, base_dirs, "before_call"), devices=(device,),
                              mode=mode, backend=backend, timeout=timeout, fix=False, what_if=False)
            report = verify_targets([ref], default_settings(), options)[0]
        except TargetError as exc:
            raise pytest.UsageError(str(exc)) from None
        m = report.devices[0].original
        if m.status == "skipped":
            pytest.skip(m.message)
        failure = describe_failure(m, max_graph_breaks, max_recompiles)
        if failure:
            pytest.fail("\n".join(failure), pytrace=False)
        return m

    return check


def _base_dirs(node: pytest.Item | pytest.FixtureRequest, config: pytest.Config) -> list[str]:
    path = getattr(node, "path", None)
    dirs = [str(path.parent)] if path is not None else []
    return dirs + [str(config.rootpath), os.getcwd()]


@pytest.fixture
def compile_budget(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``compile_budget(target, inputs=None, *, max_graph_breaks=0, max_recompiles=0, ...)``."""
    return _checker(_base_dirs(request.node, request.config))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    for mark in item.iter_markers(MARKER):
        if not mark.args:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{MARKER} needs a target")
        _checker(_base_dirs(item, item.config))(*mark.args, **mark.kwargs)
