"""Compare ``dynalint check`` with what Dynamo did, line by line and program by program.

Graph breaks are scored as the project's labelled sets score them: a site is a line where Dynamo
broke; a ``graph-break`` diagnostic hits it when it lies in the site's statement span (a simple
statement's lines, or the header of a compound one); a diagnostic that hits no site is a false
alarm.  Recompiles are scored per program: positive when Dynamo recompiled at least once over the
three calls, predicted when a ``recompile`` diagnostic lies in the program's files.
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from .dynamo_run import Observed, Recompiled
from .generate import Program
from .idioms import ARGUMENTS


@dataclass(frozen=True)
class Disagreement:
    program: str
    kind: str
    """``break-fn`` / ``break-fp`` (one line), ``recompile-fn`` / ``recompile-fp`` (one program)."""
    file: str
    line: int
    idiom: tuple[str, str, str, str] | None
    """(provenance, use, context, container) of the snippet the line belongs to; None: scaffolding."""
    detail: str
    """The codes reported (false alarms), Dynamo's break type (misses) or the failing guard."""


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    def __str__(self) -> str:
        return (f"precision {self.precision:.3f} recall {self.recall:.3f} "
                f"(tp {self.tp} fp {self.fp} fn {self.fn}" + (f" tn {self.tn})" if self.tn else ")"))


@dataclass
class Result:
    breaks: Score = field(default_factory=Score)
    recompiles: Score = field(default_factory=Score)
    disagreements: list[Disagreement] = field(default_factory=list)
    measured: int = 0
    invalid: list[str] = field(default_factory=list)
    shadowed: int = 0
    """Diagnostics on lines Dynamo never traced because an earlier break in the function made it run
    the frame eagerly (a break in a loop): neither hit nor false alarm, the run cannot tell."""
    breaks_by: dict[str, Score] = field(default_factory=lambda: defaultdict(Score))
    """Production (``provenance=item``, ``capture=none``...) -> the break lines of its snippets (scaffolding
    lines: ``scaffold``) in programs drawn with it."""
    recompiles_by: dict[str, Score] = field(default_factory=lambda: defaultdict(Score))
    """Production -> the programs drawn with it (any of their snippets)."""

    def count(self, kind: str, outcome: str, productions: Iterable[str]) -> None:
        """Add one ``tp``/``fp``/``fn``/``tn`` of ``kind`` (``breaks`` or ``recompiles``), overall and
        to each production."""
        total = getattr(self, kind)
        setattr(total, outcome, getattr(total, outcome) + 1)
        by = getattr(self, f"{kind}_by")
        for prod in set(productions):
            setattr(by[prod], outcome, getattr(by[prod], outcome) + 1)


def run_dynalint(root: str) -> dict[str, dict[str, list[dict]]]:
    """Diagnostics of ``dynalint check`` over the whole corpus: package -> file -> diagnostics."""
    proc = subprocess.run(
        [sys.executable, "-m", "dynalint", "check", "--format", "json", "--no-cache", "--exit-zero",
         "-j", "1", "."], cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"dynalint check failed ({proc.returncode}): {proc.stderr[-2000:]}")
    out: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for d in json.loads(proc.stdout or "[]"):
        parts = os.path.normpath(d["path"]).split(os.sep)
        if len(parts) >= 2:
            out[parts[-2]][parts[-1]].append(d)
    return out


def function_of(tree: ast.AST) -> dict[int, tuple[int, int]]:
    """Line -> the span of the innermost function that holds it."""
    out: dict[int, tuple[int, int]] = {}
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for fn in sorted(funcs, key=lambda n: n.lineno):  # inner functions start later: they win
        for ln in range(fn.lineno, (fn.end_lineno or fn.lineno) + 1):
            out[ln] = (fn.lineno, fn.end_lineno or fn.lineno)
    return out


def statement_spans(tree: ast.AST) -> dict[int, tuple[int, int]]:
    """Line -> the span a diagnostic may lie in to hit a break on that line."""
    spans: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            span = (node.lineno, body[0].lineno - 1)
        else:
            span = (node.lineno, node.end_lineno or node.lineno)
        for ln in range(span[0], span[1] + 1):
            old = spans.get(ln)
            if old is None or old[1] - old[0] >= span[1] - span[0]:  # the innermost statement
                spans[ln] = span
    return spans


_NUMBER = re.compile(r"\b\d+(\.\d+)?\b")


_SNIPPET_NAME = re.compile(r"\b[pvr](\d+)\b")


def _guard(failures: tuple[str, ...]) -> str:
    """The first failing guard, numbers masked, without the source line Dynamo appends."""
    return _NUMBER.sub("N", failures[0].split("#", 1)[0]).strip() if failures else "?"


_RESUME_AT = re.compile(r"^torch_dynamo_resume_in_.*_at_(\d+)$")


def _guarded_snippet(prog: Program, rec: Recompiled, guard: str) -> int | None:
    """The snippet whose value a failing guard names (``v0``, ``p1.v``; an argument, ``k`` or ``c``,
    belongs to the first snippet that reads it), else the snippet whose break the recompiled resume
    function follows."""
    m = _SNIPPET_NAME.search(guard)
    if m and int(m[1]) < len(prog.spec.snippets):
        return int(m[1])
    for arg, provenance in ARGUMENTS.items():
        if re.search(rf"\b{arg}\b", guard):
            return next((i for i, s in enumerate(prog.spec.snippets) if s.provenance == provenance), None)
    at = _RESUME_AT.search(rec.function)
    if at and int(at[1]) in prog.tags.get(rec.file, {}):
        return prog.tags[rec.file][int(at[1])]
    return None


def compare(programs: list[Program], observed: dict[str, Observed],
            diagnostics: dict[str, dict[str, list[dict]]]) -> Result:
    res = Result()
    for prog in programs:
        obs = observed[prog.name]
        if obs.error:
            res.invalid.append(f"{prog.name}: {obs.error}")
            continue
        res.measured += 1
        diags = diagnostics.get(prog.name, {})

        def idiom(fname: str, line: int) -> tuple[str, str, str, str] | None:
            tag = prog.tags.get(fname, {}).get(line)
            return None if tag is None else prog.spec.snippets[tag].key

        def line_productions(fname: str, line: int) -> tuple[str, ...]:
            tag = prog.tags.get(fname, {}).get(line)
            return prog.spec.productions() + (("scaffold",) if tag is None
                                              else prog.spec.snippets[tag].productions())

        shadowed_lines: set[tuple[str, int]] = set()
        for fname, src in prog.files.items():
            tree = ast.parse(src)
            spans, funcs = statement_spans(tree), function_of(tree)
            sites = obs.breaks.get(fname, set())
            traced = obs.traced.get(fname, set())

            def shadowed(line: int) -> bool:
                lo, hi = spans.get(line, (line, line))
                fn = funcs.get(line)
                return (fn is not None and not any(lo <= t <= hi for t in traced)
                        and any(fn[0] <= b < lo for b in sites))

            site_spans = {ln: spans.get(ln, (ln, ln)) for ln in sites}
            predicted: dict[int, list[str]] = defaultdict(list)
            for d in diags.get(fname, []):
                if d["kind"] == "graph-break":
                    predicted[d["line"]].append(d["code"])
            for ln, (lo, hi) in sorted(site_spans.items()):
                if any(lo <= p <= hi for p in predicted):
                    res.count("breaks", "tp", line_productions(fname, ln))
                else:
                    res.count("breaks", "fn", line_productions(fname, ln))
                    res.disagreements.append(Disagreement(prog.name, "break-fn", fname, ln, idiom(fname, ln),
                                                          obs.break_types.get((fname, ln), "")))
            for p in range(1, len(src.splitlines()) + 1):
                if shadowed(p):
                    shadowed_lines.add((fname, p))
            for p, codes in sorted(predicted.items()):
                if (fname, p) in shadowed_lines:
                    res.shadowed += 1
                elif not any(lo <= p <= hi for lo, hi in site_spans.values()):
                    res.count("breaks", "fp", line_productions(fname, p))
                    res.disagreements.append(Disagreement(prog.name, "break-fp", fname, p, idiom(fname, p),
                                                          ",".join(sorted(set(codes)))))

        # every recompile diagnostic counts, also one on a line Dynamo never traced: the score is the
        # program's, and a frame Dynamo compiles of its own when its caller runs eagerly is reported at
        # that caller's call, a line Dynamo never traces
        rec_diags = [(f, d) for f, ds in diags.items() for d in ds if d["kind"] == "recompile"]
        positive, predicted_rec = bool(obs.recompiles), bool(rec_diags)
        program_productions = prog.spec.productions() + tuple(p for s in prog.spec.snippets
                                                              for p in s.productions())
        outcome = ("tp" if predicted_rec else "fn") if positive else ("fp" if predicted_rec else "tn")
        res.count("recompiles", outcome, program_productions)
        if outcome == "fn":
            guard = _guard(obs.recompiles[0].guards)
            tag = _guarded_snippet(prog, obs.recompiles[0], guard)
            key = None if tag is None else prog.spec.snippets[tag].key
            res.disagreements.append(Disagreement(prog.name, "recompile-fn", "model.py", 0, key, guard))
        elif outcome == "fp":
            for f, d in rec_diags:
                res.disagreements.append(Disagreement(prog.name, "recompile-fp", f, d["line"],
                                                      idiom(f, d["line"]), d["code"]))
    return res
