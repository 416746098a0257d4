"""Shared helpers for the test suite: checking snippets and running rule examples under Dynamo."""
from __future__ import annotations

import inspect
import textwrap
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import pytest

from dynalint.core.diagnostics import Diagnostic
from dynalint.engine.pipeline import check_source
from dynalint.rules.base import Example
from dynalint.config.settings import Settings

#: Settings keys of examples that are also Dynamo config options.
DYNAMO_KEYS = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops")


def settings_for(example: Example | None = None, **overrides: Any) -> Settings:
    values = dict(example.settings) if example is not None else {}
    values.update(overrides)
    if "reorderable_logging_functions" in values:
        values["reorderable_logging_functions"] = tuple(values["reorderable_logging_functions"])
    return Settings(**values)


def check(code: str, path: str = "example.py", **settings: Any) -> list[Diagnostic]:
    """Diagnostics for a snippet (dedented)."""
    return check_source(textwrap.dedent(code).lstrip("\n"), path, Settings(**settings))


def codes(code: str, **settings: Any) -> list[str]:
    return [d.code for d in check(code, **settings)]


def break_lines(code: str, **settings: Any) -> set[int]:
    """The lines ``check`` reports a graph break on in ``code``."""
    return {d.line for d in check(code, **settings) if d.kind == "graph-break"}


def marked_lines(code: str, mark: str = "breaks") -> set[int]:
    """The lines of ``code`` (dedented, as :func:`check` reads it) ending with ``# <mark>``."""
    text = textwrap.dedent(code).lstrip("\n")
    return {i for i, line in enumerate(text.splitlines(), 1) if line.rstrip().endswith(f"# {mark}")}


def assert_dynamo_breaks_on_marked_lines(code: str, target: str, inputs: str, tmp_path) -> None:
    """Real Dynamo, compiling ``target`` of ``code`` over ``inputs``, reports no error and breaks exactly
    on the lines :func:`marked_lines` reads."""
    obs, _ = run_example_under_dynamo(Example(textwrap.dedent(code), target=target, inputs=inputs), tmp_path)
    assert not obs.errors, obs.errors
    assert obs.break_lines() == marked_lines(code)


def marked_case_tests(cases: list[tuple[str, str, str, str]]) -> tuple[Callable[..., None], Callable[..., None]]:
    """The two tests of a module of ``(name, code, target, inputs)`` cases whose break lines are marked
    ``# breaks``: ``check`` reports exactly the marked lines, and real Dynamo, compiling ``target`` over
    ``inputs``, breaks exactly there.  Bind them to module names so that pytest collects them:
    ``test_flagged_lines, test_flagged_lines_break_under_dynamo = marked_case_tests(CASES)``."""
    from conftest import requires_torch

    parametrize = pytest.mark.parametrize("name, code, target, inputs", cases, ids=[c[0] for c in cases])

    @parametrize
    def test_flagged_lines(name: str, code: str, target: str, inputs: str) -> None:
        assert break_lines(code, entry_points=(target,)) == marked_lines(code)

    @requires_torch
    @parametrize
    def test_flagged_lines_break_under_dynamo(name: str, code: str, target: str, inputs: str, tmp_path) -> None:
        assert_dynamo_breaks_on_marked_lines(code, target, inputs, tmp_path)

    return test_flagged_lines, test_flagged_lines_break_under_dynamo


def script_case_tests(cases: dict[str, tuple[str, list[int], int]], code: str
                      ) -> tuple[Callable[..., None], Callable[..., None]]:
    """The two tests of a module of scripts, ``name -> (script, lines, recompiles)``: ``check`` reports
    ``code`` on exactly ``lines`` of each, and real Dynamo, running it as a script (its ``__main__`` block),
    recompiles ``recompiles`` times.  Bind them to module names so that pytest collects them: ``test_check,
    test_dynamo = script_case_tests(CASES, "DYN203")``."""
    from conftest import requires_torch

    parametrize = pytest.mark.parametrize("name", sorted(cases))

    @parametrize
    def test_check(name: str) -> None:
        script, lines, _ = cases[name]
        assert [d.line for d in check(script) if d.code == code] == lines

    @requires_torch
    @parametrize
    def test_dynamo(name: str, tmp_path) -> None:
        script, _, recompiles = cases[name]
        messages = recompiles_of_script(tmp_path, name.replace("-", "_"), script)
        assert len(messages) == recompiles, messages

    return test_check, test_dynamo


def lines_of(diagnostics: list[Diagnostic], code: str) -> set[int]:
    return {d.line for d in diagnostics if d.code == code}


def run_example_under_dynamo(example: Example, tmp_path) -> Any:
    """Compile the example's target with Dynamo over its input stream; returns (Observation, module)."""
    import torch

    from dynalint.verify.probe import dynamo_config

    import os

    os.makedirs(tmp_path, exist_ok=True)
    # importing an example may change Dynamo's global config (reorderable logging functions, a capture
    # flag set in its header): keep that change local to this run
    config = torch._dynamo.config
    with dynamo_config(reorderable_logging_functions=set(config.reorderable_logging_functions),
                       capture_scalar_outputs=config.capture_scalar_outputs,
                       capture_dynamic_output_shape_ops=config.capture_dynamic_output_shape_ops):
        return _run_example(example, tmp_path)


def _run_example(example: Example, tmp_path) -> Any:
    import torch

    from dynalint.verify.probe import dynamo_config, load_module_from_source, observe, unwrap_compiled

    module = load_module_from_source(example.source, directory=str(tmp_path))
    target_name = example.target or _default_target(module)
    obj = getattr(module, target_name)
    torch.manual_seed(0)
    inputs = eval(example.inputs, module.__dict__)  # noqa: S307 - the examples are ours
    if inspect.isclass(obj):
        init = eval(example.init, module.__dict__)  # noqa: S307
        fn = obj(*init)
        module._instance = fn
    else:
        # a target that compiles parts of itself is called as it is
        fn = unwrap_compiled(obj) if example.compile_target else obj

    def before_call(i: int) -> None:
        torch.manual_seed(i)
        if example.between_calls:
            exec(example.between_calls, module.__dict__, {"i": i})  # noqa: S102

    config = {k: v for k, v in example.settings.items() if k in DYNAMO_KEYS}
    if "reorderable_logging_functions" in example.settings:
        config["reorderable_logging_functions"] = torch._dynamo.config.reorderable_logging_functions | {
            {"print": print}.get(name, name) for name in example.settings["reorderable_logging_functions"]
        }
    with dynamo_config(**config):
        obs = observe(fn, inputs, files_of_interest=[module.__file__], before_call=before_call,
                      compile=example.compile_target)
    return obs, module


def _default_target(module: Any) -> str:
    """The example's compiled function, or its only nn.Module class."""
    import torch

    for name, obj in vars(module).items():
        if hasattr(obj, "_torchdynamo_orig_callable") and getattr(obj, "__module__", None) == module.__name__:
            return name
    for name, obj in vars(module).items():
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        orig = getattr(obj, "_torchdynamo_orig_callable", None)
        if orig is not None:
            return name
        if inspect.isclass(obj) and issubclass(obj, torch.nn.Module):
            return name
    raise AssertionError("example has no compiled function or nn.Module class; set Example.target")


def eager_outputs(example: Example, directory) -> list[Any]:
    """Run the example's target eagerly over its inputs (same seeds as under Dynamo)."""
    import os

    import torch


    os.makedirs(directory, exist_ok=True)
    from dynalint.verify.probe import dynamo_config

    # as under Dynamo (run_example_under_dynamo): a flag the example sets in its header stays local
    config = torch._dynamo.config
    with dynamo_config(reorderable_logging_functions=set(config.reorderable_logging_functions),
                       capture_scalar_outputs=config.capture_scalar_outputs,
                       capture_dynamic_output_shape_ops=config.capture_dynamic_output_shape_ops):
        return _eager_outputs(example, directory)


def _eager_outputs(example: Example, directory) -> list[Any]:
    import torch

    from dynalint.verify.probe import load_module_from_source, unwrap_compiled

    module = load_module_from_source(example.source, directory=str(directory))
    target_name = example.target or _default_target(module)
    obj = getattr(module, target_name)
    torch.manual_seed(0)
    inputs = eval(example.inputs, module.__dict__)  # noqa: S307
    if inspect.isclass(obj):
        fn = obj(*eval(example.init, module.__dict__))  # noqa: S307
        module._instance = fn
    else:
        fn = unwrap_compiled(obj)
    outs = []
    for i, args in enumerate(inputs):
        torch.manual_seed(i)
        if example.between_calls:
            exec(example.between_calls, module.__dict__, {"i": i})  # noqa: S102
        outs.append(fn(*args))
    return outs


def outputs_close(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if not (a.is_floating_point() or a.is_complex()):
            return bool(torch.equal(a, b))
        return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(outputs_close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(outputs_close(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))
    return a == b


def write(tmp_path, name: str, text: str) -> str:
    """Write ``text`` to ``tmp_path/name`` (creating folders); returns the path."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def run(capsys, *args: str) -> tuple[int, str, str]:
    """``dynalint check ARGS`` in process, uncached and single-job: (exit status, stdout, stderr)."""
    from dynalint.adapters.cli import main

    code = main(["check", "--no-cache", "--jobs", "1", *args])
    out, err = capsys.readouterr()
    return code, out, err


def checked_breaks(tmp_path, capsys, code: str, *options: str) -> set[tuple[int, str]]:
    """(line, code) of every graph-break finding ``dynalint check [OPTIONS]`` reports on ``code`` as one file."""
    import json

    path = write(tmp_path, "m.py", Example(code).source)
    _, out, _ = run(capsys, "--format", "json", *options, path)
    return {(d["line"], d["code"]) for d in json.loads(out) if d["kind"] == "graph-break"}


def dynamo_break_lines(tmp_path, code: str, inputs: str, target: str = "main") -> set[int]:
    """The lines where Dynamo's graph-break log reports a break when ``target`` of ``code`` runs on
    ``inputs`` (the target calls the compiled code itself); fails on a Dynamo error."""
    example = Example(code, inputs=inputs, target=target, compile_target=False)
    obs, module = run_example_under_dynamo(example, tmp_path)
    assert not obs.errors, obs.errors
    return obs.break_lines(module.__file__)


def run_original_and_fixed(tmp_path, source: str, fixed: str, target: str, inputs: list) -> tuple[Any, Any, Any, Any]:
    """The original and the fixed text loaded as modules, and what real Dynamo observes when ``target`` of
    each (which compiles what it runs itself) is called on ``inputs``: ``(before, after, seen_before,
    seen_after)``; fails on an error in either run."""
    from dynalint.verify.probe import load_module_from_source, observe

    before = load_module_from_source(source, directory=str(tmp_path))
    after = load_module_from_source(fixed, directory=str(tmp_path))
    seen_before = observe(getattr(before, target), inputs, compile=False)
    seen_after = observe(getattr(after, target), inputs, compile=False)
    assert not seen_before.errors and not seen_after.errors, (seen_before.errors, seen_after.errors)
    return before, after, seen_before, seen_after


def break_tests(code: str, breaks: set[tuple[int, str]], inputs: str, target: str = "main"
                ) -> tuple[Callable[..., None], Callable[..., None]]:
    """The two tests of a module about one code text: ``dynalint check`` reports exactly ``breaks`` (line,
    code), and real Dynamo, running ``target`` of the code on ``inputs``, breaks on exactly those lines.  Bind
    them to module names so that pytest collects them: ``test_check, test_dynamo = break_tests(...)``."""
    from conftest import requires_torch

    def test_check(tmp_path, capsys) -> None:
        assert checked_breaks(tmp_path, capsys, code) == breaks

    @requires_torch
    def test_dynamo(tmp_path) -> None:
        assert dynamo_break_lines(tmp_path, code, inputs, target) == {line for line, _ in breaks}

    return test_check, test_dynamo


def compile_eagerly(monkeypatch) -> None:
    """Make ``torch.compile`` (called or as a decorator factory) use Dynamo with the eager backend, so a
    test sees Dynamo's breaks and recompiles without Inductor's compile time."""
    import torch

    compile_ = torch.compile

    def eager(model=None, **kw):
        kw["backend"] = "eager"
        return compile_(model, **kw) if model is not None else lambda f: compile_(f, **kw)

    monkeypatch.setattr(torch, "compile", eager)


def recompiles_of_run(code: str, name: str, *args: Any) -> list[str]:
    """The "Recompiling function" messages Dynamo logs while ``code`` (indented text, made to run as a module
    named ``<name>``) is executed and its ``run(*args)`` called."""
    namespace: dict = {}
    with dynamo_recompile_log() as messages:
        exec(compile(textwrap.dedent(code), f"<{name}>", "exec"), namespace)
        namespace["run"](*args)
    return messages


def recompiles_of_script(tmp_path, name: str, code: str) -> list[str]:
    """The "Recompiling function" messages Dynamo logs while ``code``, written to ``tmp_path/<name>.py``, runs
    as a script (its ``if __name__ == "__main__":`` block included)."""
    import runpy

    path = write(tmp_path, f"{name}.py", code)
    with dynamo_recompile_log() as messages:
        runpy.run_path(path, run_name="__main__")
    return messages


@contextmanager
def dynamo_recompile_log() -> Iterator[list[str]]:
    """The message of every "Recompiling function" record Dynamo logs inside the block (its guard
    failures follow "failure(s):"), from a fresh Dynamo state, which is reset again afterwards."""
    import logging

    import torch

    messages: list[str] = []

    class Recorder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if "Recompiling function" in message:
                messages.append(message)

    handler = Recorder()
    logger = logging.getLogger("torch._dynamo")
    torch._dynamo.reset()
    torch._logging.set_logs(recompiles=True)
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        torch._logging.set_logs()
        torch._dynamo.reset()


def finding_lines(text_output: str) -> list[str]:
    """The finding lines of ``check``'s text output (without the indented ``help:`` lines)."""
    return [line for line in text_output.splitlines() if line.strip() and not line.startswith("  ")]


#: A two-file package whose helper's tensor branch is reached only from the other file's ``forward``
#: (scope ``compiled``): a face that analysed ``pkg/helpers.py`` alone would report nothing there.
PACKAGE_HELPERS = textwrap.dedent("""
    def scale(x):
        if x.sum() > 0:
            return x * 2
        return x
""").lstrip()

PACKAGE_MODEL = textwrap.dedent("""
    import torch
    from torch import nn

    from .helpers import scale


    class Net(nn.Module):
        def forward(self, x):
            return scale(x)
""").lstrip()


def assert_generated_module_current(generated: str, module: Any) -> None:
    """A module of tables generated from torch (``python -m GENERATOR > FILE``) is ``generated``, what the
    generator prints from the installed torch (the ``generated_table`` fixture): a new torch version is
    one regeneration, never a stale table."""
    from pathlib import Path

    path = Path(module.__file__)
    assert generated == path.read_text(), f"regenerate: python -m dynalint.verify.{path.stem}_table > {path}"


RESUME_PREFIX = "torch_dynamo_resume_in_"
"""How Dynamo names the code of the part of a function it resumes after a graph break in it
(``torch_dynamo_resume_in_<function>_at_<line>``)."""


def recompiled_frames(messages: list[str]) -> set[tuple[str, bool]]:
    """(function, resumed) of each frame Dynamo recompiled, from the messages of
    :func:`dynamo_recompile_log`: ``resumed`` when the frame is the part of the function Dynamo resumed
    after a graph break in it, not the function's own frame."""
    frames = set()
    for message in messages:
        name = message.split("Recompiling function")[1].split()[0]
        if name.startswith(RESUME_PREFIX):
            frames.add((name[len(RESUME_PREFIX):].rsplit("_at_", 1)[0], True))
        else:
            frames.add((name, False))
    return frames


def reporting_functions(code: str, rule: str) -> list[tuple[str, bool, Diagnostic]]:
    """(function, on its ``def`` line, finding) of each finding of ``rule`` that :func:`check` reports on
    ``code``, in order: the function is the innermost ``def`` at or above the finding's line."""
    lines = textwrap.dedent(code).lstrip("\n").splitlines()
    found = []
    for d in check(code):
        if d.code != rule:
            continue
        at = next(i for i in range(d.line - 1, -1, -1) if lines[i].lstrip().startswith("def "))
        found.append((lines[at].lstrip()[4:].split("(")[0], at == d.line - 1, d))
    return found


def _call_run(namespace: dict) -> None:
    namespace["run"]()


@dataclass(frozen=True)
class RecompileCase:
    """A module whose compiled functions recompile under Dynamo when it runs, and what the analysis
    reports in it: the two are checked by the tests :func:`recompile_case_tests` makes."""

    name: str
    code: str
    reported: set[str]
    """The functions ``rule`` reports in, once each."""
    recompiled: set[str]
    """The functions whose frames Dynamo recompiles while ``run`` runs the module."""
    resumed: bool
    """Whether those frames are the parts Dynamo resumes after a break in the function (else the
    functions' own frames)."""
    rule: str = "DYN204"
    at_definition: bool = False
    """Whether each finding is on the ``def`` line of its function (a value handed to it), else in its
    body."""
    words: tuple[str, ...] = ()
    """What every finding's message says."""
    seed: int | None = None
    """The seed of torch's generator before the module runs (None: left as it is)."""
    run: Callable[[dict], None] = _call_run
    """Runs the module, given its namespace (by default its ``run()``)."""


def recompile_case_tests(cases: list[RecompileCase]) -> tuple[Callable[..., None], Callable[..., None]]:
    """The two tests of a module of :class:`RecompileCase` cases: ``check`` reports ``rule`` in exactly
    the functions ``reported`` names, where ``at_definition`` says, with ``words`` in every message; and
    running the module under real Dynamo recompiles exactly the frames ``recompiled`` and ``resumed``
    name.  Bind them to module names so that pytest collects them:
    ``test_reported_functions, test_recompiled_frames_under_dynamo = recompile_case_tests(CASES)``."""
    from conftest import requires_torch

    parametrize = pytest.mark.parametrize("case", cases, ids=[c.name for c in cases])

    @parametrize
    def test_reported_functions(case: RecompileCase) -> None:
        found = reporting_functions(case.code, case.rule)
        assert sorted(name for name, _, _ in found) == sorted(case.reported), found
        assert all(at == case.at_definition for _, at, _ in found), found
        assert all(word in d.message for _, _, d in found for word in case.words), found

    @requires_torch
    @parametrize
    def test_recompiled_frames_under_dynamo(case: RecompileCase) -> None:
        import torch

        namespace: dict = {}
        if case.seed is not None:
            torch.manual_seed(case.seed)
        with dynamo_recompile_log() as messages:
            exec(compile(textwrap.dedent(case.code), f"<{case.name}>", "exec"), namespace)
            case.run(namespace)
        frames = recompiled_frames(messages)
        assert frames == {(name, case.resumed) for name in case.recompiled}, frames

    return test_reported_functions, test_recompiled_frames_under_dynamo
