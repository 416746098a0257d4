"""Applying fixes: plans from the fixers, applied to a fixed point.

Fixes that touch overlapping code are applied one round at a time (a fix waits for
every earlier one it overlaps, applied in the round or not); each round re-parses
and re-analyses the result, so later fixes see earlier ones.  Round one may be
made where the file was analysed (:func:`begin_fix`, in a worker process of the
project pass), and the rounds go on from it (:class:`FixProgress`).
A round's result must re-parse and keep every comment, once (none lost, none
copied), otherwise the fixes of that round that break it are dropped.  Running the fixer again on its own
output changes nothing.  A fixer that raises is a bug: it is reported as a
:class:`FixerError` (which fixer, where, what) and skipped, the run going on.
"""
from __future__ import annotations

import bisect
import dataclasses
import functools
import logging
import os
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

import libcst as cst

from dynalint.analysis.syntax import parent_map
from dynalint.core.diagnostics import Diagnostic, Fix, TextEdit
from dynalint.engine.pipeline import Analysis, analyse

from dynalint.fixers.support.base import FixPlan, Fixer, Refused, Replacement, fixers_for
from dynalint.fixers.support.context import FixContext
from dynalint.core.positions import LineIndex, LineMapping, changed_blocks, node_ranges, statement_starts
from dynalint.core.text_lines import split_lines
from dynalint.rules.base import Finding
from dynalint.config.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.project import SourceIndex

MAX_ROUNDS = 10

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AppliedFix:
    code: str
    fixer: str
    description: str
    safety: str
    line: int
    """Where the finding was, in the original text (1-based)."""
    column: int = 1


@dataclass(frozen=True)
class FixerError:
    """A fixer that raised while preparing or applying its fix: a bug, reported and skipped."""

    fixer: str
    code: str
    path: str
    line: int
    column: int
    error: str
    """The exception, on one line, and where it was raised (``KeyError: 'x' at branch_to_where.py:120``)."""

    def message(self) -> str:
        return (f"{self.path}:{self.line}:{self.column}: error: fixer {self.fixer} failed on {self.code} "
                f"({self.error}); no fix applied there. This is a bug in dynalint: please report it with "
                "the file and the command line")


@dataclass
class FixResult:
    source: str
    applied: list[AppliedFix] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)
    unsafe_available: int = 0
    """Remaining diagnostics that have an unsafe fix (offered with ``--unsafe-fixes``)."""
    refused: list["RefusedFix"] = field(default_factory=list)
    """Fixes a fixer declined on the final code, with the precondition it could not prove (at lines of
    the original text, like ``applied``)."""
    errors: list[FixerError] = field(default_factory=list)
    """Fixers that raised (their findings stay in ``remaining``), at lines of the original text."""

    @property
    def changed(self) -> bool:
        return bool(self.applied)


@dataclass(frozen=True)
class RefusedFix:
    code: str
    fixer: str
    reason: str
    line: int
    """Where the finding is, in the original text (1-based)."""


@dataclass
class _Candidate:
    finding: Finding
    diagnostic: Diagnostic
    fixer: type[Fixer]
    plan: FixPlan


def _fixer_error(fixer: type[Fixer], diagnostic: Diagnostic, exc: Exception) -> FixerError:
    libcst = os.path.dirname(cst.__file__)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(libcst)]
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    text = " ".join(str(exc).split())
    return FixerError(fixer.name, diagnostic.code, diagnostic.path, diagnostic.line, diagnostic.column,
                      f"{type(exc).__name__}: {text[:200]}{where}")


def _candidates(analysis: Analysis, errors: list[FixerError], refused: list[RefusedFix] | None = None
                ) -> list[_Candidate]:
    """The first plan of each finding's fixers (in their explicit order).  A fixer that declines with
    :class:`Refused` is recorded in ``refused`` when no later fixer offers a plan; one that raises
    is a bug, added to ``errors``, and the next fixer is tried."""
    ctx = FixContext(analysis)
    out: list[_Candidate] = []
    for finding, diagnostic in analysis.reported:
        reasons: list[RefusedFix] = []
        for fixer_cls in fixers_for(finding.rule.code):
            try:
                plan = fixer_cls().plan(finding, ctx)
            except Refused as why:
                reasons.append(RefusedFix(finding.rule.code, fixer_cls.name, why.reason, diagnostic.line))
                plan = None
            except Exception as exc:  # a fixer bug must not stop the run: reported, the next fixer tried
                errors.append(_fixer_error(fixer_cls, diagnostic, exc))
                plan = None
            if plan is not None:
                plan.fixer = fixer_cls.name
                out.append(_Candidate(finding, diagnostic, fixer_cls, plan))
                break
        else:
            if refused is not None:
                refused.extend(reasons)
    return out


_COMPOUND = (cst.BinaryOperation, cst.BooleanOperation, cst.UnaryOperation, cst.Comparison, cst.IfExp, cst.Lambda,
             cst.NamedExpr)
_OPERATOR_PARENTS = (cst.BinaryOperation, cst.BooleanOperation, cst.UnaryOperation, cst.Comparison,
                     cst.ComparisonTarget, cst.Attribute, cst.Subscript, cst.Call, cst.Await)


class _Replace(cst.CSTTransformer):
    """Swap nodes for their replacements, parenthesizing a compound expression put where an operator
    would otherwise bind into it (``y / x[m].mean()`` -> ``y / (s / n)``, not ``y / s / n``)."""

    def __init__(self, replacements: dict[int, Replacement], enter: set[int] | None = None) -> None:
        super().__init__()
        self.replacements = replacements
        self.enter = enter
        """Ids of the nodes on the paths to the replaced ones (None: every node): the walk skips the
        other subtrees, so applying one fix costs the depth of the file, not its size."""
        self._parents: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._parents.append(node)
        return self.enter is None or id(node) in self.enter

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        self._parents.pop()
        new = self.replacements.get(id(original_node))
        if new is None:
            return updated_node
        parent = self._parents[-1] if self._parents else None
        if isinstance(new, _COMPOUND) and not new.lpar and isinstance(parent, _OPERATOR_PARENTS):
            new = new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        if isinstance(original_node, cst.BaseStatement):
            new = _keep_comments(original_node, new)
        return new


def _comments(node: cst.CSTNode) -> list[str]:
    """Every comment under ``node``, in source order (read from the node fields directly: libcst's
    ``children`` property runs a visitor per node, which made this walk the cost of a fix check)."""
    out: list[str] = []
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Comment:
            out.append(current.value)
            continue
        kids: list[cst.CSTNode] = []
        for name in _node_fields(type(current)):
            value = getattr(current, name)
            if isinstance(value, cst.CSTNode):
                kids.append(value)
            elif isinstance(value, (list, tuple)):
                kids.extend(v for v in value if isinstance(v, cst.CSTNode))
        kids.reverse()
        stack.extend(kids)
    return out


@functools.lru_cache(maxsize=None)
def _node_fields(tp: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(tp))


def _keep_comments(original: cst.BaseStatement, new: Replacement) -> Replacement:
    """A rewritten statement keeps every comment of the original: those its replacement does not
    carry (an ``if`` header's, a removed branch's) go on their own lines above it."""
    statements = list(new.nodes) if isinstance(new, cst.FlattenSentinel) else [new]
    if not statements or not isinstance(statements[0], cst.BaseStatement):
        return new  # removed: fixers only remove lines without comments
    kept = {c for s in statements for c in _comments(s)}
    missing = [c for c in dict.fromkeys(_comments(original)) if c not in kept]
    if not missing:
        return new
    first = statements[0]
    lines = [*first.leading_lines, *(cst.EmptyLine(comment=cst.Comment(c)) for c in missing)]
    statements[0] = first.with_changes(leading_lines=lines)
    return cst.FlattenSentinel(statements) if isinstance(new, cst.FlattenSentinel) else statements[0]


def apply_plans(module: cst.Module, plans: Iterable[FixPlan]) -> str:
    """The module's code with the plans applied (plans must not overlap)."""
    replacements: dict[int, Replacement] = {}
    module_statements: list[str] = []
    imports: list[str] = []
    olds: list[cst.CSTNode] = []
    for plan in plans:
        for key, (old, new) in plan.replacements.items():
            replacements[key] = new
            olds.append(old)
        module_statements.extend(s for s in plan.module_statements if s not in module_statements)
        imports.extend(s for s in plan.imports if s not in imports)
    new_module = module.visit(_Replace(replacements, _paths_to(module, olds))) if replacements else module
    if imports:
        # libcst.codemod loads libcst.matchers, half a second of import time: only for a plan that adds imports
        from libcst.codemod import CodemodContext
        from libcst.codemod.visitors import AddImportsVisitor

        context = CodemodContext()
        for name in imports:
            AddImportsVisitor.add_needed_import(context, name)
        new_module = AddImportsVisitor(context).transform_module(new_module)
    if module_statements:
        new_module = _add_module_statements(new_module, module_statements)
    return new_module.code


def _paths_to(module: cst.Module, nodes: list[cst.CSTNode]) -> set[int] | None:
    """Ids of ``nodes`` and of their ancestors in ``module`` (None when one is not in it)."""
    parents = parent_map(module)
    out: set[int] = {id(module)}
    for node in nodes:
        current: cst.CSTNode | None = node
        while current is not None and id(current) not in out:
            out.add(id(current))
            current = parents.get(id(current))
            if current is None and node is not module:
                return None
        # reached a node already on a path (or the module): the rest of the path is in
    return out


def _add_module_statements(module: cst.Module, statements: list[str]) -> cst.Module:
    """Statements added once at module level, after every top-level import (they may need them)."""
    body = list(module.body)
    existing = {module.code_for_node(s).strip() for s in body}
    new_stmts = [cst.parse_statement(s) for s in statements if s.strip() not in existing]
    if not new_stmts:
        return module
    last_import = 0
    for i, s in enumerate(body):
        if isinstance(s, cst.SimpleStatementLine) and all(isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body):
            last_import = i + 1
        elif i == 0 and isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Expr) and \
                isinstance(s.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            last_import = 1  # after the docstring
    first = new_stmts[0]
    if isinstance(first, cst.SimpleStatementLine):
        new_stmts[0] = first.with_changes(leading_lines=[cst.EmptyLine()])
    body[last_import:last_import] = new_stmts
    return module.with_changes(body=body)


def _non_overlapping(module: cst.Module, source: str, candidates: list[_Candidate], *, wait: bool = True
                     ) -> list[_Candidate]:
    """The candidates a round applies, in their order: each that overlaps no earlier candidate, applied
    in this round or left for a later one.  One left for later may move or remove what a later
    candidate rewrites (eager-tail takes the end of a function, with a ``print`` defer-logging would
    defer, out of the compiled code): the later candidate waits for it, and is planned again, if it
    still applies, on the code it leaves.  ``wait=False``: each that overlaps no earlier one chosen
    (as many rewrites of disjoint code as there are)."""
    nodes = [old for c in candidates for old, _ in c.plan.replacements.values()]
    ranges = node_ranges(module, source, nodes)
    earlier: list[tuple[tuple[int, int], tuple[int, int]]] = []
    chosen = []
    for c in candidates:
        spans = []
        for old, _ in c.plan.replacements.values():
            r = ranges.get(id(old))
            if r is None:
                break
            spans.append(((r.line, r.column), (r.end_line, r.end_column)))
        else:
            free = not any(a[0] < b[1] and b[0] < a[1] for a in spans for b in earlier)
            if free:
                chosen.append(c)
            if free or wait:
                earlier.extend(spans)
    return chosen


def _applies(module: cst.Module, source: str, c: _Candidate, comments: Counter[str],
             errors: list[FixerError], proven: bool = False) -> str | None:
    """The source with ``c`` applied alone, if that is sound (a plan that fails to apply is reported).
    ``proven``: ``c`` is part of a set of fixes already shown sound together (no parse needed)."""
    try:
        new_source = _same_ending(module, source, apply_plans(module, [c.plan]))
    except Exception as exc:
        errors.append(_fixer_error(c.fixer, c.diagnostic, exc))
        return None
    return new_source if proven or _sound_near(module, source, new_source, comments) else None


def _proven_together(module: cst.Module, source: str, candidates: list[_Candidate],
                     comments: Counter[str]) -> set[int]:
    """The candidates (by id) whose plans, applied together, give a module that parses and keeps every
    comment.  Their plans rewrite disjoint nodes, so each one alone is sound too: one parse of the
    file proves them all, instead of one parse per offered fix."""
    if len(candidates) < 2:  # nothing to prove together (and no positions to compute: a walk of the file)
        return set()
    together = _non_overlapping(module, source, candidates, wait=False)
    if len(together) < 2:
        return set()
    try:
        ok = _sound(apply_plans(module, [c.plan for c in together]), comments)
    except Exception:  # a broken plan: each is checked (and reported) on its own
        return set()
    return {id(c) for c in together} if ok else set()


def _same_ending(module: cst.Module, source: str, new_source: str) -> str:
    """libcst drops the final line break of a file whose lines end in a lone carriage return: put it back."""
    if source.endswith("\r") and module.code + "\r" == source:
        return new_source + "\r"
    return new_source


def _sound(code: str, comments: Counter[str]) -> bool:
    """The rewritten module parses and has every comment of the original (``comments``) as many times as
    the original had it (a comment it writes anew is allowed)."""
    try:
        module = cst.parse_module(code)
    except Exception:
        return False
    return _same_comments(comments, Counter(_comments(module)))


def _same_comments(before: Counter[str], after: Counter[str], known: Counter[str] | None = None) -> bool:
    """No comment of ``before`` is lost in ``after``, and ``after`` adds no copy of one of ``known`` (those of
    the whole file; by default ``before``)."""
    known = before if known is None else known
    return not before - after and not any(text in known for text in after - before)


def _sound_near(module: cst.Module, source: str, new_source: str, comments: Counter[str]) -> bool:
    """:func:`_sound`, parsing only the top-level statements the rewrite touched.

    The text before a top-level statement of ``source`` is whole statements, so the tokenizer starts
    each one afresh: the rewritten file parses exactly when each rewritten stretch of whole statements
    parses alone, ending with a line break where more follows (libcst keeps every comment, so it keeps
    the original's comments exactly when the stretches together keep the comments they had: a rewrite may
    move one from a stretch to another, a helper appended after the file's last statement).  A stretch that
    does not parse alone (it may continue the statement before it) is decided by parsing the whole file."""
    a, b = split_lines(source, keepends=True), split_lines(new_source, keepends=True)
    blocks = changed_blocks(a, b)
    if not blocks:
        return True
    starts = sorted(set(_statement_starts(module, source)) | {0, len(a)})
    before: Counter[str] = Counter()
    after: Counter[str] = Counter()
    try:
        for (i0, i1), (j0, j1) in _stretches(blocks, starts, len(a)):
            if i0 and a[i0 - 1].rstrip("\r\n").endswith("\\"):
                return _sound(new_source, comments)  # the line before continues into the stretch
            old, new = "".join(a[i0:i1]), "".join(b[j0:j1])
            if j1 < len(b) and new and not new.endswith(("\n", "\r")):
                return _sound(new_source, comments)
            before.update(_comments(cst.parse_module(old)))
            after.update(_comments(cst.parse_module(new)))
    except Exception:  # a stretch that does not parse alone
        return _sound(new_source, comments)
    return _same_comments(before, after, comments)


_STARTS: list = [None, []]
"""The statement starts of the last module asked for (one module's fixes ask many times in a row)."""


def _statement_starts(module: cst.Module, source: str) -> list[int]:
    if _STARTS[0] is not module:
        _STARTS[:] = [module, statement_starts(module, source)]
    return _STARTS[1]


def _stretches(blocks: list[tuple[int, int, int, int]], starts: list[int], size: int
               ) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The changed blocks widened to whole top-level statements (old lines ``starts`` bound them) and
    merged where they overlap: ((old start, old end), (new start, new end)); the lines outside them
    are equal in both texts."""
    groups: list[list[int]] = []  # old start, old end, lines gained inside
    for i1, i2, j1, j2 in blocks:
        lo = starts[bisect.bisect_right(starts, i1) - 1]
        hi = starts[bisect.bisect_left(starts, i2)] if i2 < size else size
        gained = (j2 - j1) - (i2 - i1)
        if groups and lo < groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], hi)
            groups[-1][2] += gained
        else:
            groups.append([lo, hi, gained])
    out = []
    shift = 0
    for lo, hi, gained in groups:
        out.append(((lo, hi), (lo + shift, hi + shift + gained)))
        shift += gained
    return out


def _allowed(c: _Candidate, unsafe: bool) -> bool:
    return unsafe or c.plan.safety == "safe"


@dataclass
class FixProgress:
    """Where fixing one text stands between rounds: what was applied to the text the user wrote, the
    text it made, and the result once a round fixed nothing more.  It holds no tree, so that a worker
    process of the project pass, which analysed the file, hands round one back (see
    :func:`begin_fix`) and the fix goes on elsewhere without analysing that text again."""

    original: str
    """The text the user wrote (positions of ``applied`` and ``errors`` are in it)."""
    source: str
    """The text as the rounds so far made it (the next round analyses it)."""
    unsafe: bool
    applied: list[AppliedFix] = field(default_factory=list)
    errors: list[FixerError] = field(default_factory=list)
    rounds: int = 0
    """Rounds that rewrote the text."""
    result: FixResult | None = None
    """The outcome, once a round found nothing more to fix (or the rounds ran out)."""


def fix_source(source: str, path: str, settings: Settings, *, unsafe: bool = False,
               analysis: Analysis | None = None, project: "SourceIndex | None" = None,
               entries: dict[str, dict[str, Any]] | None = None, begun: FixProgress | None = None) -> FixResult:
    """Apply every allowed fix to ``source`` until nothing more can be fixed.  ``analysis``: the
    analysis of ``source`` already made (``analyse(..., record_values=True)``), reused for round one.
    ``project``/``entries``: the other checked files and what their compiled code hands this one
    (see :meth:`dynalint.engine.session.Session.entries`), so that ``fix`` sees what ``check`` sees.
    ``begun``: the rounds already made on ``source`` (:func:`begin_fix`), which the fix goes on from."""
    progress = begun if begun is not None else FixProgress(source, source, unsafe)
    while progress.result is None:
        if analysis is None:
            try:
                analysis = analyse(progress.source, path, settings, record_values=True, project=project,
                                   entries=entries)
            finally:
                if project is not None:
                    project.release(path)
        fix_round(progress, analysis)
        analysis = None
    return progress.result


def begin_fix(source: str, analysis: Analysis, unsafe: bool) -> FixProgress:
    """Round one of fixing ``source``, from ``analysis`` (made with values recorded): where a file's
    analysis is made, so that the fix does not analyse the same text again."""
    progress = FixProgress(source, source, unsafe)
    fix_round(progress, analysis)
    return progress


def fix_round(progress: FixProgress, analysis: Analysis) -> None:
    """One round on ``progress.source`` from its ``analysis``: apply the fixes that do not overlap
    (``progress.source`` becomes the rewritten text), or, when nothing more is fixed or the rounds ran
    out, set ``progress.result`` (what remains is read from the same analysis)."""
    source, original, errors = progress.source, progress.original, progress.errors
    if analysis.module is None or progress.rounds >= MAX_ROUNDS:
        progress.result = _finished(progress, analysis)
        return
    back = _Back(original, source) if source != original else None
    reported = len(errors)
    refused: list[RefusedFix] = []
    offered = _candidates(analysis, errors, refused)
    errors[reported:] = [_errors_back(e, back) for e in errors[reported:]]
    candidates = [c for c in offered if _allowed(c, progress.unsafe)]
    if not candidates:
        progress.result = _finished(progress, analysis, (offered, refused))
        return
    candidates = [c for c in candidates if not c.fixer.last_resort] or candidates
    chosen = _non_overlapping(analysis.module, source, candidates)
    comments = Counter(_comments(analysis.module))
    try:
        new_source: str | None = apply_plans(analysis.module, [c.plan for c in chosen])
    except Exception:  # one of the plans is broken: found (and reported) below
        new_source = None
    if new_source is None or not _sound(new_source, comments):
        reported = len(errors)
        chosen = [c for c in chosen if _applies(analysis.module, source, c, comments, errors) is not None]
        errors[reported:] = [_errors_back(e, back) for e in errors[reported:]]
        new_source = apply_plans(analysis.module, [c.plan for c in chosen])
    new_source = _same_ending(analysis.module, source, new_source)
    if new_source == source or not chosen:
        progress.result = _finished(progress, analysis, (offered, refused))
        return
    for c in chosen:
        # a later round: report the position in the text the user wrote
        line, column = _original_position(back, c.diagnostic.line, c.diagnostic.column)
        progress.applied.append(AppliedFix(c.finding.rule.code, c.fixer.name, c.plan.description, c.plan.safety,
                                           line, column))
    progress.source = new_source
    progress.rounds += 1


def _finished(progress: FixProgress, final: Analysis,
              planned: tuple[list[_Candidate], list[RefusedFix]] | None = None) -> FixResult:
    """The result of fixing, from the analysis of the last text: what remains, the unsafe fixes left,
    the fixes refused there.  ``planned``: what the fixers offered and refused on that analysis, when
    the round asked them already (they are not asked again)."""
    source, original, errors = progress.source, progress.original, progress.errors
    unsafe_left = 0
    refused: list[RefusedFix] = []
    if final.module is not None:
        back = _Back(original, source) if source != original else None
        if planned is None:
            reported = len(errors)
            left = _candidates(final, errors, refused)
            errors[reported:] = [_errors_back(e, back) for e in errors[reported:]]
        else:
            left, refused = planned
        refused = [dataclasses.replace(r, line=_original_position(back, r.line, 1)[0]) for r in refused]
        if not progress.unsafe:
            unsafe_left = sum(1 for c in left if c.plan.safety == "unsafe")
    return FixResult(source, progress.applied, final.diagnostics, unsafe_left, refused, _distinct(errors))


class _Back:
    """The line mapping from a rewritten text to the original, made when first asked (a diff of the
    whole file: most rounds report nothing that needs it)."""

    def __init__(self, original: str, rewritten: str) -> None:
        self.texts = (original, rewritten)
        self._mapping: LineMapping | None = None

    def original(self, line: int) -> tuple[int, bool]:
        if self._mapping is None:
            self._mapping = LineMapping(*self.texts)
        return self._mapping.original(line)


def _original_position(back: _Back | None, line: int, column: int) -> tuple[int, int]:
    """A position in a rewritten text -> the position in the text the user wrote (``back``: the line
    mapping between them, None when nothing was rewritten yet); a line a rewrite replaced maps to the
    first line of what it replaced, at column 1."""
    if back is None:
        return line, column
    original, unchanged = back.original(line)
    return original, column if unchanged else 1


def _errors_back(error: FixerError, back: _Back | None) -> FixerError:
    line, column = _original_position(back, error.line, error.column)
    return dataclasses.replace(error, line=line, column=column)


def _distinct(errors: list[FixerError]) -> list[FixerError]:
    """One report per fixer bug and file (every round meets it again, at shifted lines): the first."""
    first: dict[tuple[str, str, str], FixerError] = {}
    for e in errors:
        first.setdefault((e.fixer, e.code, e.error), e)
    return list(first.values())


def diagnostics_with_fixes(source: str, path: str, settings: Settings, *,
                           analysis: Analysis | None = None, project: "SourceIndex | None" = None,
                           entries: dict[str, dict[str, Any]] | None = None) -> list[Diagnostic]:
    """``check`` diagnostics, each carrying its fix (as text edits) when one exists (``project``,
    ``entries``: as for :func:`fix_source`).

    A fixer that raises is logged (``dynalint.engine.fixing`` logger, as an error) and offers no fix."""
    if analysis is None:
        try:
            analysis = analyse(source, path, settings, record_values=True, project=project, entries=entries)
        finally:
            if project is not None:
                project.release(path)
    if analysis.module is None:
        return analysis.diagnostics
    errors: list[FixerError] = []
    candidates = _candidates(analysis, errors)
    by_diag = {id(c.diagnostic): c for c in candidates}
    comments = Counter(_comments(analysis.module)) if candidates else Counter()  # a walk of the whole tree
    proven = _proven_together(analysis.module, source, candidates, comments)
    out = []
    for _finding, diag in analysis.reported:
        c = by_diag.get(id(diag))
        if c is not None:
            new_source = _applies(analysis.module, source, c, comments, errors, proven=id(c) in proven)
            if new_source is not None and new_source != source:
                diag = _with_fix(diag, Fix(c.plan.safety, c.plan.description, text_edits(source, new_source),
                                           fixer=c.fixer.name))
        out.append(diag)
    for error in _distinct(errors):
        log.error("%s", error.message())
    other = [d for d in analysis.diagnostics if all(d is not r for _, r in analysis.reported)]
    return sorted(out + other, key=Diagnostic.sort_key)


def _with_fix(diag: Diagnostic, fix: Fix) -> Diagnostic:
    from dataclasses import replace

    return replace(diag, fix=fix)


def text_edits(old: str, new: str) -> tuple[TextEdit, ...]:
    """The edits turning ``old`` into ``new``, from one line diff (:func:`changed_blocks`), each narrowed
    to the characters that change (1-based positions in ``old``, end exclusive; lines break at ``\\n``,
    ``\\r\\n``, ``\\r``)."""
    a = split_lines(old, keepends=True)
    b = split_lines(new, keepends=True)
    starts = [0]
    for line in a:
        starts.append(starts[-1] + len(line))
    index = LineIndex(old)
    edits = []
    for i1, i2, j1, j2 in changed_blocks(a, b):
        before, after = "".join(a[i1:i2]), "".join(b[j1:j2])
        prefix = 0
        while prefix < min(len(before), len(after)) and before[prefix] == after[prefix]:
            prefix += 1
        suffix = 0
        while suffix < min(len(before), len(after)) - prefix and before[-1 - suffix] == after[-1 - suffix]:
            suffix += 1
        while prefix and before[prefix - 1] == "\r" and before[prefix:prefix + 1] == "\n":
            prefix -= 1  # never split a \r\n
        while suffix and before[len(before) - suffix] == "\n" and before[len(before) - suffix - 1:][:1] == "\r":
            suffix -= 1
        start, end = starts[i1] + prefix, starts[i1] + len(before) - suffix
        (l1, c1), (l2, c2) = index.position(start), index.position(end)
        edits.append(TextEdit(l1, c1, l2, c2, after[prefix:len(after) - suffix]))
    return tuple(edits)


def apply_text_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits (positions in ``text``, as :func:`text_edits` makes them)."""
    index = LineIndex(text)

    def offset(line: int, column: int) -> int:
        if line - 1 >= len(index.line_starts):
            return len(text)
        return min(index.line_starts[line - 1] + column - 1, len(text))

    spans = sorted(((offset(e.line, e.column), offset(e.end_line, e.end_column), e.new_text) for e in edits),
                   reverse=True)
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text
