"""How the static diagnostics line up with what Dynamo did.

A graph-break diagnostic is *confirmed* when it lies in the statement Dynamo
broke on (for ``if``/``while``/``for``, the header); *not confirmed* when it
lies in a statement that ran but no break happened there; a break with no diagnostic
in its statement is *missed*.  A break whose logged line cannot be trusted
(``BreakSite.uncertain``) is matched with nothing.  Diagnostics in code the stream never ran are
left out: the stream says nothing about them.  A target is predicted to
recompile when a recompile diagnostic lies in code that ran.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field

from dynalint.core.diagnostics import Diagnostic
from dynalint.verify.break_lines import function_spans
from dynalint.verify.results import BreakSite, Measurement


@dataclass
class Prediction:
    confirmed: list[Diagnostic] = field(default_factory=list)
    not_confirmed: list[Diagnostic] = field(default_factory=list)
    missed: list[BreakSite] = field(default_factory=list)
    not_exercised: int = 0
    uncertain: list[Diagnostic] = field(default_factory=list)
    """Diagnostics in a function where Dynamo logged a break on a line that cannot be trusted: the
    break may be theirs, so they are neither confirmed nor not confirmed."""
    recompile_predicted: bool = False
    recompile_observed: bool = False
    recompile_diagnostics: list[Diagnostic] = field(default_factory=list)
    site_codes: dict[int, list[str]] = field(default_factory=dict)
    """Index into Measurement.breaks -> codes of the diagnostics that predicted that break."""
    unpredicted_recompiles: list[str] = field(default_factory=list)
    """Missed causes: ``file:line`` of the user code an observed recompile's guard came from, where
    no recompile diagnostic lies."""
    matched_recompiles: list[str] = field(default_factory=list)
    """Causes both observed (a failing guard's user code) and predicted (a recompile diagnostic there)."""
    extra_recompiles: list[str] = field(default_factory=list)
    """Causes predicted in code that ran where no observed recompile's guard came from."""

    def to_json(self) -> dict:
        def brief(d: Diagnostic) -> dict:
            return {"line": d.line, "column": d.column, "code": d.code, "message": d.message}

        return {"confirmed": [brief(d) for d in self.confirmed],
                "not_confirmed": [brief(d) for d in self.not_confirmed],
                "missed": [{"file": b.file, "line": b.line, "gb_type": b.gb_type} for b in self.missed],
                "not_exercised": self.not_exercised,
                "uncertain": [brief(d) for d in self.uncertain],
                "recompile_predicted": self.recompile_predicted, "recompile_observed": self.recompile_observed,
                "recompile_diagnostics": [brief(d) for d in self.recompile_diagnostics],
                "unpredicted_recompiles": self.unpredicted_recompiles,
                "recompile_causes": {"matched": self.matched_recompiles, "missed": self.unpredicted_recompiles,
                                     "extra": self.extra_recompiles},
                "predicted_codes_by_break": {str(k): v for k, v in self.site_codes.items()}}


def statement_spans(source: str) -> list[tuple[int, int]]:
    """(first, last) line of every statement; compound statements only up to their body."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        if isinstance(body, list) and body:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            spans.append((start, max(start, body[0].lineno - 1)))
        else:
            spans.append((node.lineno, node.end_lineno or node.lineno))
    return spans


def _span_of(spans: list[tuple[int, int]], line: int) -> tuple[int, int]:
    best = None
    for s, e in spans:
        if s <= line <= e and (best is None or e - s < best[1] - best[0]):
            best = (s, e)
    return best or (line, line)


def compare(diagnostics: list[Diagnostic], m: Measurement, source: str, path: str | None = None) -> Prediction:
    """Line one file's diagnostics up with the breaks and recompiles a measurement saw in that file
    (``path``; by default the target's own file)."""
    spans = statement_spans(source)
    here = os.path.realpath(path or m.source_path)
    indices = [i for i, b in enumerate(m.breaks)
               if os.path.realpath(b.file) == here and b.gb_type != "Observed exception" and not b.uncertain]
    sites = [m.breaks[i] for i in indices]
    ran = [tuple(r) for r in (m.executed if path is None or here == os.path.realpath(m.source_path)
                              else m.executed_files.get(here, []))]

    def executed(line: int) -> bool:
        """Whether the statement holding ``line`` ran (line events fire on a statement's first line)."""
        s, e = _span_of(spans, line)
        return any(a <= e and s <= b for a, b in ran)

    p = Prediction(recompile_observed=bool(m.recompiles))
    break_spans = [_span_of(spans, b.line) for b in sites]
    shifted = [span for b in m.breaks if b.uncertain and os.path.realpath(b.file) == here
               for span in function_spans(b.file, b.function)]
    hit_sites: set[int] = set()
    for d in diagnostics:
        if d.kind == "recompile":
            if executed(d.line):
                p.recompile_diagnostics.append(d)
            continue
        if d.kind != "graph-break":
            continue
        matched = [i for i, (s, e) in enumerate(break_spans) if s <= d.line <= e]
        if matched:
            p.confirmed.append(d)
            hit_sites.update(matched)
            for i in matched:
                p.site_codes.setdefault(indices[i], []).append(d.code)
        elif executed(d.line) and any(a <= d.line <= b for a, b in shifted):
            p.uncertain.append(d)
        elif executed(d.line):
            p.not_confirmed.append(d)
        else:
            p.not_exercised += 1
    p.missed = [b for i, b in enumerate(sites) if i not in hit_sites]
    p.recompile_predicted = bool(p.recompile_diagnostics)
    return p


def compare_files(files: list[tuple[str, list[Diagnostic], str]], m: Measurement) -> Prediction:
    """The prediction over every user file the stream ran, as (path, diagnostics, source): a factory
    or a function in one file that runs a model defined in another is predicted by that file's
    diagnostics."""
    merged = Prediction(recompile_observed=bool(m.recompiles))
    for path, diagnostics, source in files:
        p = compare(diagnostics, m, source, path)
        merged.confirmed += p.confirmed
        merged.not_confirmed += p.not_confirmed
        merged.missed += p.missed
        merged.not_exercised += p.not_exercised
        merged.uncertain += p.uncertain
        merged.recompile_diagnostics += p.recompile_diagnostics
        merged.site_codes.update(p.site_codes)
    merged.recompile_predicted = bool(merged.recompile_diagnostics)
    ran = [(os.path.realpath(d.path), d.line) for d in merged.recompile_diagnostics]
    predicted = ran + [(os.path.realpath(path), d.line) for path, diagnostics, _ in files for d in diagnostics
                       if d.kind == "recompile"]
    hit: set[tuple[str, int]] = set()
    for r in m.recompiles:
        where = _guard_location(r.user_code)
        if where is None:
            continue
        tail, line = where
        label = f"{os.path.basename(tail)}:{line}"
        same = [(p, ln) for p, ln in predicted
                if line == ln and (p.endswith(tail) or tail.endswith(os.path.basename(p)))]
        hit.update(same)
        causes = merged.matched_recompiles if same else merged.unpredicted_recompiles
        if label not in causes:
            causes.append(label)
    for p, ln in ran:
        label = f"{os.path.basename(p)}:{ln}"
        if (p, ln) not in hit and label not in merged.extra_recompiles:
            merged.extra_recompiles.append(label)
    return merged


_GUARD_LOCATION = re.compile(r"#\s*(\S+?):(\d+) in \S+\s*$")


def _guard_location(user_code: str) -> tuple[str, int] | None:
    """(file, line) of ``return x * scale  # model.py:15 in forward`` (the path may be cut at its start)."""
    found = _GUARD_LOCATION.search(user_code or "")
    return (found.group(1), int(found.group(2))) if found else None
