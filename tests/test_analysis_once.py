"""What the analysis found is read, never found again: each event is classified into graph breaks
once (the evaluator, the rules and the fixers read the same classification), and ``fix`` (in one
process or with workers, however many files), ``fix --verify`` and verify's planning analyse each
file once per round of fixes (the project pass's analysis is the first round's)."""
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

from conftest import requires_torch

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


#: a file whose findings have no fix: round one rewrites nothing, and the fix is over
NO_FIX = textwrap.dedent('''
    import torch


    @torch.compile
    def run(x):
        y = torch.nonzero(x)
        return y.tolist()
''').lstrip()


@pytest.fixture
def classified(monkeypatch) -> Counter:
    """How many times each event (by ``id``) is classified into graph breaks (the events are held, so
    that an event of a later analysis never takes the ``id`` of a freed one)."""
    counts: Counter = Counter()
    held: list = []
    original = breaks_module.BreakClassifier.classify

    def classify(self, ev):
        counts[id(ev)] += 1
        held.append(ev)
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


@pytest.mark.parametrize("source", [ONE_ROUND, NO_FIX], ids=["one-round", "no-fix"])
def test_fix_asks_the_fixers_once_per_analysis(monkeypatch, analysed: Counter, source: str) -> None:
    """What remains when a round fixes nothing more is read from what the fixers offered and refused
    in that round (they are not asked again on the same analysis)."""
    from dynalint.fixers.support import context as context_module

    made: list[object] = []
    original = context_module.FixContext.__init__

    def counted(self, analysis, *args, **kwargs):
        made.append(analysis)
        original(self, analysis, *args, **kwargs)

    monkeypatch.setattr(context_module.FixContext, "__init__", counted)
    result = fix_source(source, "m.py", Settings(), unsafe=True)
    assert result.remaining or result.applied
    assert len(made) == analysed["m.py"] and len({id(a) for a in made}) == len(made)


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


def test_fix_buffer_runs_the_files_around_it_in_this_process(tmp_path) -> None:
    """The files analysed around one given file are its importers, which import much the same
    modules: a pass over them runs in this process whatever ``jobs`` (workers would each load those
    modules again), and the fixed file is analysed once per round (the pass's analysis is the first)."""
    path, _ = _project(tmp_path)
    for i in range(3):
        (tmp_path / f"user{i}.py").write_text(f"from model import step\n\n\ndef run{i}(x):\n    return step(x)\n")
    log = tmp_path.parent / f"{tmp_path.name}-analyses.txt"
    original = pipeline._analysed

    def logged(module, source, where, *args, **kwargs):
        with open(log, "a", encoding="utf-8") as fh:  # a forked worker would write here too
            fh.write(f"{os.getpid()} {os.path.basename(where)}\n")
        return original(module, source, where, *args, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(pipeline, "_analysed", logged)
    try:
        session = Session(resolve([str(tmp_path)]), jobs=2)
        assert len(session.scope([path])[0]) == 4  # enough files for worker processes, were they given
        result = session.fix_buffer(path, ONE_ROUND, unsafe=True)
    finally:
        mp.undo()
    assert [a.fixer for a in result.applied] == ["defer-logging"]
    lines = [line.split() for line in log.read_text().splitlines()]
    assert {pid for pid, _ in lines} == {str(os.getpid())}
    assert [name for _, name in lines].count("model.py") == 2
    assert {name for _, name in lines} == {"model.py", "user0.py", "user1.py", "user2.py"}


class ProcessLog:
    """What every process of a run analysed and classified (this one and the worker processes it
    forks, which inherit the patched functions): a line ``PID analyse NAME`` per analysis of the
    file NAME, ``PID classify NAME`` per event classified into graph breaks while NAME is the file
    last analysed in that process (a fix's rounds follow the analysis they read)."""

    def __init__(self, path) -> None:
        self.path = path

    def lines(self, kind: str) -> list[tuple[str, str]]:
        if not self.path.exists():
            return []
        return [(pid, name) for pid, k, name in map(str.split, self.path.read_text().splitlines()) if k == kind]

    def counts(self, kind: str) -> Counter:
        return Counter(name for _, name in self.lines(kind))

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


@pytest.fixture
def process_log(tmp_path, monkeypatch) -> ProcessLog:
    log = ProcessLog(tmp_path.parent / f"{tmp_path.name}-log.txt")
    current = ["?"]
    analysed, classify = pipeline._analysed, breaks_module.BreakClassifier.classify

    def write(kind: str, name: str) -> None:
        with open(log.path, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {kind} {name}\n")

    def logged_analysis(module, source, where, *args, **kwargs):
        current[0] = os.path.basename(where)
        write("analyse", current[0])
        return analysed(module, source, where, *args, **kwargs)

    def logged_classify(self, ev):
        write("classify", current[0])
        return classify(self, ev)

    monkeypatch.setattr(pipeline, "_analysed", logged_analysis)
    monkeypatch.setattr(breaks_module.BreakClassifier, "classify", logged_classify)
    return log


def _fix_project(tmp_path, files: dict[str, str], workers: int) -> dict[str, object]:
    """``fix --unsafe-fixes`` of every file of a project holding ``files``: each file's result, by name."""
    from dynalint.adapters.fix_files import Job, fix_outcomes

    (tmp_path / "pyproject.toml").write_text("[tool.dynalint]\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    config = resolve([str(tmp_path)])
    jobs = [Job(str(tmp_path / name), config.settings_for(str(tmp_path / name)), unsafe=True, diff=True, verify=(),
                inputs=None, timeout=10.0) for name in files]
    return {os.path.basename(o.path): o.result for o in fix_outcomes(jobs, config, workers, cache_dir=False)}


#: two files one round rewrites, two it leaves: enough files for worker processes in the pass and the fix
MIXED = {"fixed0.py": ONE_ROUND, "plain0.py": NO_FIX, "fixed1.py": ONE_ROUND, "plain1.py": NO_FIX}


def test_fix_with_workers_analyses_each_file_once_per_round(tmp_path, process_log: ProcessLog) -> None:
    results = _fix_project(tmp_path, MIXED, workers=2)
    assert {n: [a.fixer for a in r.applied] for n, r in results.items()} == {
        "fixed0.py": ["defer-logging"], "fixed1.py": ["defer-logging"], "plain0.py": [], "plain1.py": []}
    assert len({pid for pid, _ in process_log.lines("analyse")} - {str(os.getpid())}) >= 1  # in workers
    # the pass's analysis is round one; a rewritten file is analysed once more (round two finds nothing)
    assert process_log.counts("analyse") == {"fixed0.py": 2, "fixed1.py": 2, "plain0.py": 1, "plain1.py": 1}


def test_fix_with_workers_classifies_as_one_process_does(tmp_path, process_log: ProcessLog) -> None:
    alone = _fix_project(tmp_path, MIXED, workers=1)
    classified_alone = process_log.counts("classify")
    process_log.clear()
    pooled = _fix_project(tmp_path, MIXED, workers=2)
    assert {n: r.source for n, r in pooled.items()} == {n: r.source for n, r in alone.items()}
    assert classified_alone and process_log.counts("classify") == classified_alone


def test_fix_of_more_files_than_kept_analyses_each_once(tmp_path, process_log: ProcessLog) -> None:
    """Round one of each fix is made from the pass's analysis however many files are fixed (the pass
    keeps no tree for it)."""
    from dynalint.engine.session import MAX_KEPT

    files = {f"plain{i}.py": NO_FIX for i in range(MAX_KEPT + 2)}
    results = _fix_project(tmp_path, files, workers=1)
    assert all(not r.applied and r.remaining for r in results.values())
    assert process_log.counts("analyse") == dict.fromkeys(files, 1)


HELPER_OF_MODEL = textwrap.dedent('''
    def scale(x):
        print("x:", x.sum())
        return x * 2
''').lstrip()

MODEL_WITH_HELPER = "from helpers import scale\n" + ONE_ROUND.replace("y = x * 2", "y = scale(x)")


def test_verify_planning_of_a_second_file_reads_the_first_files_analysis(tmp_path, analysed: Counter) -> None:
    """The files a target's stream ran are planned one at a time; the pass that plans the helper reads
    what the model's pass found in the model (which imports the helper) instead of analysing it again."""
    from dynalint.verify.api import _plan_file, _session
    from dynalint.verify.options import Options
    from dynalint.verify.targets import Ref

    (tmp_path / "pyproject.toml").write_text("[tool.dynalint]\n")
    model, helper = tmp_path / "model.py", tmp_path / "helpers.py"
    model.write_text(MODEL_WITH_HELPER)
    helper.write_text(HELPER_OF_MODEL)
    workdir = tmp_path.parent / f"{tmp_path.name}-work"
    workdir.mkdir()
    session = _session([Ref(str(model), "step")], Settings(), str(workdir))
    planned = _plan_file(str(model), session, Options(unsafe=True), str(workdir))
    assert planned.fixed is not None and [a.fixer for a in planned.fixed.applied] == ["defer-logging"]
    assert analysed["model.py"] == 2  # check's analysis is the fix's first round; the fix's second
    _plan_file(str(helper), session, Options(unsafe=True), str(workdir))
    assert analysed["model.py"] == 2  # not analysed again to plan the helper


@requires_torch
def test_fix_verify_analyses_each_text_once(tmp_path, analysed: Counter) -> None:
    """``fix --verify`` offers the fixes of the pass's analysis, and analyses each text a confirmed
    fix makes once (the texts it measures are compared, never analysed again)."""
    from dynalint.adapters.fix_files import Job, fix_outcomes

    path, session = _project(tmp_path)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n\ndef dynalint_inputs():\n    return [(torch.ones(3),), (-torch.ones(3),)]\n")
    job = Job(path, session.config.settings_for(path), unsafe=True, diff=True, verify=("step",), inputs=None,
              timeout=120.0)
    [outcome] = fix_outcomes([job], session.config, 1, cache_dir=False)
    assert outcome.error is None and [a.fixer for a in outcome.result.applied] == ["defer-logging"]
    assert analysed["model.py"] == 2  # the original (the pass's analysis), the fixed text
