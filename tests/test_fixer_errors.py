"""A fixer that raises is reported (which fixer, where, "please report") and the rest of the run goes on;
a file that cannot be fixed still counts in the summary and the exit status."""
from __future__ import annotations

import logging
import textwrap

import libcst as cst
import pytest

import dynalint.adapters.fix_files
from dynalint.adapters.cli import main
from dynalint import fixers
from dynalint.fixers.support import base
from dynalint.engine.fixing import diagnostics_with_fixes, fix_source
from dynalint.config.settings import Settings

MODEL = textwrap.dedent("""\
    import torch


    @torch.compile
    def step(x):
        print("x:", x.sum())
        if x.sum() > 0:
            x = x * 2
        return x
""")


class RaisingFixer(base.Fixer):
    """Raises while preparing its plan (tried first for DYN101)."""

    name = "raising-fixer"
    codes = ("DYN101",)
    safety = "unsafe"
    summary = reasoning = "test double"
    next_fixer_applies = True
    """The plan fails, so the next fixer for the finding is tried."""

    def plan(self, finding, ctx):
        return {}["missing"]


class BrokenPlanFixer(RaisingFixer):
    """Prepares a plan that cannot be applied (a module statement that does not parse)."""

    name = "broken-plan-fixer"
    next_fixer_applies = False  # its plan was chosen, then failed: the finding stays

    def plan(self, finding, ctx):
        return base.FixPlan("broken", "unsafe", module_statements=["def ("]).replace(
            finding.node, cst.Name("x"))


@pytest.fixture(params=[RaisingFixer, BrokenPlanFixer])
def failing_fixer(request, monkeypatch):
    base.all_fixers()
    monkeypatch.setattr(base, "_REGISTRY", [request.param, *base._REGISTRY])
    monkeypatch.setitem(fixers.PREFERENCE, "DYN101", (request.param.name, *fixers.PREFERENCE["DYN101"]))
    return request.param


def test_a_failing_fixer_is_reported_and_the_others_still_fix(failing_fixer):
    result = fix_source(MODEL, "m.py", Settings(), unsafe=True)
    assert [(e.fixer, e.code, e.path, e.line) for e in result.errors] == \
        [(failing_fixer.name, "DYN101", "m.py", 7)]
    error = result.errors[0]
    assert error.error.startswith(("KeyError: 'missing' at test_fixer_errors.py:", "ParserSyntaxError"))
    assert "please report" in error.message() and error.message().startswith("m.py:7:8: error: fixer ")
    # the other findings are fixed as usual (and the same finding by the next fixer, when the plan failed)
    if failing_fixer.next_fixer_applies:
        assert {a.fixer for a in result.applied} == {"branch-to-where", "defer-logging"}
        assert not result.remaining
    else:
        assert {a.fixer for a in result.applied} == {"defer-logging"}
        assert [(d.code, d.line) for d in result.remaining] == [("DYN101", 9)]  # below the added config line


def test_a_failing_fixer_is_logged_where_fixes_are_offered(failing_fixer, caplog):
    with caplog.at_level(logging.ERROR, logger="dynalint.engine.fixing"):
        diagnostics = diagnostics_with_fixes(MODEL, "m.py", Settings())
    assert [r.getMessage().split(" failed on ")[0] for r in caplog.records] == \
        [f"m.py:7:8: error: fixer {failing_fixer.name}"]
    assert [d.fix is not None for d in diagnostics] == [True, failing_fixer.next_fixer_applies]


def test_cli_reports_a_failing_fixer_and_goes_on(failing_fixer, tmp_path, capsys):
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text(MODEL)
    second.write_text(MODEL)
    code = main(["fix", "--unsafe-fixes", "--jobs", "1", str(first), str(second)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count(f"error: fixer {failing_fixer.name} failed on DYN101") == 2 and "please report" in err
    assert f"{first}:7:8: error" in err and f"{second}:7:8: error" in err
    for p in (first, second):
        assert ("torch.where" in p.read_text()) == failing_fixer.next_fixer_applies
        assert "reorderable_logging_functions" in p.read_text()
    if failing_fixer.next_fixer_applies:
        assert "fixed 4 issues in 2 files; 0 remain; 2 fixer errors." in err
    else:
        assert "fixed 2 issues in 2 files; 2 remain; 2 fixer errors." in err


def test_a_file_that_cannot_be_fixed_counts_in_the_summary_and_the_status(tmp_path, capsys, monkeypatch):
    def crash(*args, **kwargs):
        raise IndexError("string index out of range")

    monkeypatch.setattr(dynalint.adapters.fix_files, "fix_source", crash)
    p = tmp_path / "m.py"
    p.write_text(MODEL)
    code = main(["fix", "--unsafe-fixes", "--exit-zero", str(p)])
    err = capsys.readouterr().err
    assert code == 1 and p.read_text() == MODEL
    assert "internal error while fixing (IndexError: string index out of range)" in err
    assert f"{p}:7:8: DYN101 " in err and f"{p}:6:5: DYN105 " in err
    assert "fixed 0 issues in 0 files; 2 remain; 1 file could not be fixed." in err


def test_the_property_tests_see_fixer_errors(failing_fixer):
    """The fuzzing oracle fails on a fixer error (it is not only printed)."""
    from test_properties import assert_fix_sound, fixer_errors_logged

    with pytest.raises(AssertionError, match=failing_fixer.name):
        assert_fix_sound(MODEL, "auto")
    with fixer_errors_logged() as errors:
        diagnostics_with_fixes(MODEL, "m.py", Settings())
    assert len(errors) == 1 and failing_fixer.name in errors[0]
