"""What the analysis found is read, never found again: each event is classified into graph breaks
once (the evaluator, the rules and the fixers read the same classification), and ``fix`` and
verify's planning analyse each file once per round of fixes (the project pass's analysis is the
first round's)."""
from __future__ import annotations

import os
import textwrap
from collections import Counter

import pytest

from dynalint.analysis import breaks as breaks_module
from dynalint.config.resolver import resolve
from dynalint.config.settings import Settings
from dynalint.engine import pipeline
from dynalint.engine.fixing import diagnostics_with_fixes, fix_source
from dynalint.engine.pipeline import analyse
from dynalint.engine.session import Session

MODULE = textwrap.dedent('''
    import torch


    def helper(y):
        if y.sum() > 0:
            return y.item()
        return 0


    @torch.compile
    def step(x):
        y = x * 2
        print("y:", y.sum())
        z = helper(y)
        if x.sum() > 0:
            y = y + 1
        return y, z
''').lstrip()

#: a file one unsafe fix changes in one round (the second round finds nothing more to fix)
ONE_ROUND = textwrap.dedent('''
    import torch


    @torch.compile
    def step(x):
        y = x * 2
        print("y:", y.sum())
        return y
''').lstrip()


@pytest.fixture
def classified(monkeypatch) -> Counter:
    """How many times each event (by ``id``) is classified into graph breaks."""
    counts: Counter = Counter()
    original = breaks_module.BreakClassifier.classify

    def classify(self, ev):
        counts[id(ev)] += 1
        return original(self, ev)

    monkeypatch.setattr(breaks_module.BreakClassifier, "classify", classify)
    return counts


@pytest.fixture
def analysed(monkeypatch) -> Counter:
    """How many times each file (by base name) is analysed."""
    counts: Counter = Counter()
    original = pipeline._analysed

    def counted(module, source, path, *args, **kwargs):
        counts[os.path.basename(path)] += 1
        return original(module, source, path, *args, **kwargs)

    monkeypatch.setattr(pipeline, "_analysed", counted)
    return counts


def test_rules_and_fixers_read_one_classification(classified: Counter) -> None:
    diagnostics = diagnostics_with_fixes(MODULE, "m.py", Settings())
    assert {"DYN101", "DYN102", "DYN105"} <= {d.code for d in diagnostics}
    assert any(d.fix is not None for d in diagnostics)  # the fixers read the breaks too
    assert classified and max(classified.values()) == 1


def test_fix_rounds_read_one_classification_each(classified: Counter) -> None:
    result = fix_source(ONE_ROUND, "m.py", Settings(), unsafe=True)
    assert [a.fixer for a in result.applied] == ["defer-logging"]
    assert classified and max(classified.values()) == 1


def test_fixer_context_is_made_from_the_rules_analysis() -> None:
    from dynalint.fixers.support.context import FixContext

    analysis = analyse(MODULE, "m.py", Settings(), record_values=True)
    ctx = FixContext(analysis)
    assert ctx.breaks is analysis.context.breaks
    assert ctx.noqa is analysis.context.noqa
    reported = {id(f.node) for f in analysis.findings}
    assert reported and reported <= set(analysis.context.ranges(f.node for f in analysis.findings))


def _project(tmp_path) -> tuple[str, Session]:
    (tmp_path / "pyproject.toml").write_text("[tool.dynalint]\n")
    path = tmp_path / "model.py"
    path.write_text(ONE_ROUND)
    return str(path), Session(resolve([str(tmp_path)]))


def test_fix_analyses_each_file_once_per_round(tmp_path, analysed: Counter) -> None:
    from dynalint.adapters.fix_files import Job, fix_outcomes

    path, session = _project(tmp_path)
    job = Job(path, session.config.settings_for(path), unsafe=True, diff=True, verify=(), inputs=None, timeout=10.0)
    [outcome] = fix_outcomes([job], session.config, 1, cache_dir=False)
    assert [a.fixer for a in outcome.result.applied] == ["defer-logging"]
    assert analysed["model.py"] == 2  # round one (the project pass's analysis), round two (nothing left)


def test_fix_buffer_analyses_once_per_round(tmp_path, analysed: Counter) -> None:
    path, session = _project(tmp_path)
    result = session.fix_buffer(path, ONE_ROUND, unsafe=True)
    assert [a.fixer for a in result.applied] == ["defer-logging"]
    assert analysed["model.py"] == 2


def test_verify_planning_analyses_once_per_round(tmp_path, analysed: Counter) -> None:
    from dynalint.verify.api import _plan_file
    from dynalint.verify.options import Options

    path, session = _project(tmp_path)
    plan = _plan_file(path, session, Options(unsafe=True), str(tmp_path))
    assert {d.code for d in plan.diagnostics} == {"DYN105"}
    assert plan.fixed is not None and plan.fixed.changed
    assert analysed["model.py"] == 2  # check's analysis is the fix's first round


def test_dyn105_defer_logging_reads_the_analysis_noqa_comments(monkeypatch) -> None:
    """defer-logging's refusal for a call marked ``# noqa`` reads the comments the engine read, in the
    text it analysed: the module's code is not generated again nor its comments read again."""
    import libcst as cst

    from dynalint.core import noqa as noqa_module
    from dynalint.engine.fixing import _candidates

    source = ONE_ROUND.replace("    return y", '    print("again", y.sum())  # noqa: DYN105\n    return y')
    analysis = analyse(source, "m.py", Settings(), record_values=True)
    assert [d.code for d in analysis.diagnostics] == ["DYN105"]
    made: list[str] = []
    original_init = noqa_module.NoqaMap.__init__

    def counting_init(self, text: str) -> None:
        made.append(text)
        original_init(self, text)

    monkeypatch.setattr(noqa_module.NoqaMap, "__init__", counting_init)
    monkeypatch.setattr(cst.Module, "code", property(lambda self: pytest.fail("the module's code was generated")))
    refused: list = []
    assert _candidates(analysis, [], refused) == []
    assert [r.fixer for r in refused] == ["defer-logging"] and "marked `# noqa`" in refused[0].reason
    assert made == []


BRANCH_ON_PARAMETER = textwrap.dedent('''
    import torch


    @torch.compile
    def f(x, n{annotation}):
        if n:
            x = x + 1
        return x
''').lstrip()


@pytest.mark.parametrize("annotation, fixed", [(": torch.Tensor", True), (": int", False)])
def test_dyn101_a_parameter_is_a_certain_tensor_by_its_value(monkeypatch, annotation: str, fixed: bool) -> None:
    """branch-to-where rewrites ``if n:`` only when ``n`` is a tensor for certain: the parameter's
    value says whether its annotation declares one (the fixers do not read the annotation again)."""
    from dynalint.fixers.support import codegen

    monkeypatch.setattr(codegen, "annotation_value", lambda *a: pytest.fail("annotation read again"),
                        raising=False)
    result = fix_source(BRANCH_ON_PARAMETER.format(annotation=annotation), "m.py", Settings(), unsafe=True)
    assert ("branch-to-where" in {a.fixer for a in result.applied}) is fixed, result.source


def test_fix_buffer_analyses_once_per_round_beside_worker_processes(tmp_path) -> None:
    """The files around the fixed one are analysed in worker processes; the fixed file is analysed in
    this process, once per round (the pass's analysis is the first round)."""
    path, _ = _project(tmp_path)
    for i in range(3):
        (tmp_path / f"user{i}.py").write_text(f"from model import step\n\n\ndef run{i}(x):\n    return step(x)\n")
    log = tmp_path.parent / f"{tmp_path.name}-analyses.txt"
    original = pipeline._analysed

    def logged(module, source, where, *args, **kwargs):
        with open(log, "a", encoding="utf-8") as fh:  # worker processes write here too
            fh.write(os.path.basename(where) + "\n")
        return original(module, source, where, *args, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(pipeline, "_analysed", logged)  # forked workers inherit it
    try:
        session = Session(resolve([str(tmp_path)]), jobs=2)
        assert len(session.scope([path])[0]) == 4  # enough files for worker processes
        result = session.fix_buffer(path, ONE_ROUND, unsafe=True)
    finally:
        mp.undo()
    assert [a.fixer for a in result.applied] == ["defer-logging"]
    assert log.read_text().split().count("model.py") == 2
