"""Original vs fixed code on the differential corpus and on every fixer's examples.

Fast by default (two seeds eager, one compiled); ``DYNALINT_DIFFERENTIAL_FULL=1``
runs five seeds eager and compiled and more Hypothesis examples.
"""
from __future__ import annotations

import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from conftest import requires_torch  # noqa: E402
from dynalint.fixers.support.base import all_fixers  # noqa: E402

FULL = os.environ.get("DYNALINT_DIFFERENTIAL_FULL") == "1"
SEEDS = (0, 1, 2, 3, 4) if FULL else (0, 1)
COMPILED_SEEDS = SEEDS if FULL else (0,)


def _example_cases():
    from harness import Case

    out = []
    for fixer in all_fixers():
        for i, ex in enumerate(fixer.EXAMPLES):
            if ex.between_calls is not None:
                continue  # what changes between calls is their point (tests/test_fixer_examples.py)
            target = ex.target or re.findall(r"^(?:def|class) (\w+)", ex.before_source, re.M)[-1]
            out.append(Case(f"example-{fixer.name}-{i}", ex.before_source, target, ex.inputs, fixer.name,
                            init=ex.init, hazard=_example_hazard(fixer.name, i), compile_target=ex.compile_target))
    return out


def _example_hazard(name: str, index: int) -> str | None:
    """Examples whose rewrite shows a documented difference on their own inputs."""
    zero_grad, buffers = "zero gradient instead of", "``named_buffers()``"
    return {("branch-to-where", 3): zero_grad,
            ("python-state-to-buffer", 0): buffers, ("python-state-to-buffer", 1): buffers,
            ("skip-logging-while-compiling", 0): "never emitted from compiled code",
            ("defer-logging", 0): "``CompiledFunctionBackward``"}.get((name, index))


def _cases():
    try:
        import corpus
    except ImportError:  # pragma: no cover - torch missing
        return []
    return corpus.CASES + _example_cases()


CASES = _cases()


def _norm(text: str) -> str:
    """Whitespace folded and reStructuredText literals (````x````) as Markdown renders them (```x```)."""
    return re.sub(r"\s+", " ", text).replace("``", "`")


def test_corpus_is_large_and_covers_every_fixer():
    assert len(CASES) >= 100
    assert {c.fixer for c in CASES if c.fixer} == {f.name for f in all_fixers()}
    assert sum(1 for c in CASES if c.fixer is None) >= 25  # attacks every fixer must refuse


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_expected_fixer_fires_or_all_refuse(case):
    from dynalint.analysis.program import Scope
    from dynalint.engine.fixing import fix_source
    from dynalint.config.settings import Settings

    result = fix_source(case.source, f"{case.name}.py", Settings(scope=Scope.ALL), unsafe=True)
    applied = {a.fixer for a in result.applied}
    if case.fixer is None:
        assert not applied, (applied, result.source)
    else:
        assert case.fixer in applied, (result.refused, result.source)
    if case.hazard is not None:
        from harness import fixer_doc

        assert _norm(case.hazard) in _norm(fixer_doc(case.fixer)), "the hazard is not documented"


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fixed_code_behaves_the_same(case):
    from harness import run_case

    report = run_case(case, SEEDS, COMPILED_SEEDS)
    if case.hazard is None:
        assert not report.differences, "\n".join(report.differences[:8]) + "\n\n" + report.fixed.source


@requires_torch
def test_hypothesis_inputs():
    """Arbitrary float vectors (NaN, inf, empty selections, any length) through a few rewrites."""
    import torch
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from harness import Case, compare, observe, _prepare, load
    from dynalint.analysis.program import Scope
    from dynalint.engine.fixing import fix_source
    from dynalint.config.settings import Settings

    names = {"where-assign-f32", "reduce-mean-f32", "reduce-sum-f32", "where-nan-clean", "keep-normalize-f32"}
    chosen = [c for c in CASES if c.name in names]
    assert len(chosen) == len(names)
    pairs = []
    for c in chosen:
        fixed = fix_source(c.source, "h.py", Settings(scope=Scope.ALL), unsafe=True).source
        pairs.append((c, getattr(load(c.source), c.target), getattr(load(fixed), c.target)))
    floats = st.floats(allow_nan=True, allow_infinity=True, width=32)
    dtypes = st.sampled_from([torch.float32, torch.float64, torch.float16])

    # the default run draws the same examples every time (CI must not depend on luck); the full run
    # (DYNALINT_DIFFERENTIAL_FULL=1) searches afresh each time
    @settings(max_examples=200 if FULL else 40, deadline=None, derandomize=not FULL,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(floats, min_size=1, max_size=9), dtypes)
    def check(values, dtype):
        x = torch.tensor(values, dtype=dtype)
        for c, before, after in pairs:
            a = observe(before, None, _prepare((x,), True), 0, True)
            b = observe(after, None, _prepare((x,), True), 0, True)
            diffs = compare(a, b, Case(c.name, "", "", "", None), c.name)
            assert not diffs, (values, dtype, diffs)

    check()


def test_hazards_are_named_in_rule_output(capsys):
    """Every hazard a case relies on is in `dynalint rule <code>` for the fixer's rule."""
    from dynalint.adapters.cli import main

    by_fixer = {f.name: f for f in all_fixers()}
    for case in CASES:
        if case.hazard is None:
            continue
        code = by_fixer[case.fixer].codes[0]
        assert main(["rule", code]) == 0
        out = capsys.readouterr().out
        assert _norm(case.hazard) in _norm(out), (case.name, code)


class _BitwiseSummary:
    """At the end of the session, how many fixed cases' observations were bitwise equal to the
    original's (the bar is assert_close at the dtype's tolerances; bitwise equality is reported beside it)."""

    def pytest_terminal_summary(self, terminalreporter) -> None:
        tally = getattr(sys.modules.get("harness"), "TALLY", None)
        if tally and tally["cases"]:
            terminalreporter.write_line(
                f"differential: {tally['cases']} fixed cases, {tally['compared']} observations compared by "
                f"assert_close's rule; bitwise equal: {tally['bitwise']} of {tally['compared']} observations, "
                f"{tally['bitwise_cases']} of {tally['cases']} cases")


@pytest.fixture(scope="module", autouse=True)
def _bitwise_tally(request):
    plugins = request.config.pluginmanager
    if not any(isinstance(p, _BitwiseSummary) for p in plugins.get_plugins()):
        plugins.register(_BitwiseSummary())
    yield


@pytest.fixture(autouse=True)
def _restore_dynamo_logging_config():
    """A fixed case may change Dynamo's process-wide configuration when imported (defer-logging adds
    ``print`` to ``reorderable_logging_functions``): later tests in the process get it back as it was."""
    try:
        import torch._dynamo
    except ImportError:  # pragma: no cover - torch missing
        yield
        return
    saved = set(torch._dynamo.config.reorderable_logging_functions)
    yield
    torch._dynamo.config.reorderable_logging_functions = saved
