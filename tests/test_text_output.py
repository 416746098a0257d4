"""The text reporter's lines: the hint as a ``help:`` line, notebook cells, statistics' fix marks."""
from __future__ import annotations

import io
import json

from dynalint.adapters.reporters import statistics, text
from dynalint.core.diagnostics import Diagnostic, Fix


def _diag(code="DYN101", hint=None, fix=None, cell=None) -> Diagnostic:
    return Diagnostic("m.py", 3, 5, 3, 9, code, "graph-break", "message", hint=hint, fix=fix, cell=cell)


def _text(diagnostics, **kwargs) -> str:
    out = io.StringIO()
    text(diagnostics, out, **kwargs)
    return out.getvalue()


def test_hint_is_one_indented_help_line():
    assert _text([_diag(hint="use torch.where\n  instead"), _diag("DYN102")]).splitlines() == [
        "m.py:3:5: DYN101 message", "  help: use torch.where instead", "m.py:3:5: DYN102 message"]


def test_cell_in_the_location():
    assert _text([_diag(cell=2)]) == "m.py:cell 2:3:5: DYN101 message\n"
    assert json.loads(json.dumps(_diag(cell=2).to_json()))["cell"] == 2
    assert "cell" not in _diag().to_json()
    assert Diagnostic.from_json(_diag(cell=4).to_json()).cell == 4


def _stats(diagnostics, fmt="text") -> str:
    out = io.StringIO()
    statistics(diagnostics, out, fmt)
    return out.getvalue()


def test_statistics_marks_a_code_with_only_unsafe_fixes_as_unsafe():
    unsafe = Fix("unsafe", "rewrite", ())
    safe = Fix("safe", "rewrite", ())
    lines = _stats([_diag(fix=unsafe), _diag(fix=unsafe), _diag("DYN102", fix=safe), _diag("DYN104")]).splitlines()
    assert lines == ["2\tDYN101\t[-] tensor-condition", "1\tDYN102\t[*] scalar-extraction",
                     "1\tDYN104\tdata-dependent-shape", "capture flags: 0 of 4 graph breaks removed, 4 remain"]
    rows = {r["code"]: r for r in json.loads(_stats([_diag(fix=unsafe), _diag("DYN102", fix=safe)], "json"))}
    assert (rows["DYN101"]["fixable"], rows["DYN101"]["unsafe_fixable"]) == (False, True)
    assert (rows["DYN102"]["fixable"], rows["DYN102"]["unsafe_fixable"]) == (True, False)


def test_statistics_count_the_breaks_each_capture_flag_removes():
    flagged = Diagnostic("m.py", 4, 1, 4, 9, "DYN104", "graph-break", "m", remedy="capture_dynamic_output_shape_ops")
    lines = _stats([_diag(), flagged, Diagnostic("m.py", 5, 1, 5, 2, "DYN201", "recompile", "m")])
    assert lines.splitlines()[-1] == ("capture flags: 1 of 2 graph breaks removed "
                                      "(1 by capture_dynamic_output_shape_ops), 1 remain")
    rows = {r["code"]: r["removed_by_flags"] for r in json.loads(_stats([_diag(), flagged], "json"))}
    assert rows == {"DYN101": 0, "DYN104": 1}
