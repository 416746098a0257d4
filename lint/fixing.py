"""Applying fixes: plans from the fixers, applied to a fixed point.

Fixes that touch overlapping code are applied one round at a time; each
round re-parses and re-analyses the result, so later fixes see earlier ones.
A round's result must re-parse and keep every comment, otherwise the fixes of
that round that break it are dropped.  Running the fixer again on its own
output changes nothing.  A fixer that raises is a bug: it is reported as a
:class:`FixerError` (which fixer, where, what) and skipped, the run going on.
"""
from __future__ import annotations

import difflib
import logging
import os
import re
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

import libcst as cst

from dynalint.analysis.syntax import children, walk
from dynalint.analysis.values import Value
from dynalint.diagnostics import Diagnostic, Fix, TextEdit
from dynalint.engine import Analysis, analyse
from dynalint.fixers.base import FixPlan, Fixer, Replacement, fixers_for
from dynalint.positions import node_ranges
from dynalint.rules.base import Finding
from dynalint.settings import Settings

MAX_ROUNDS = 10

log = logging.getLogger(__name__)


class FixContext:
    """What a fixer sees: the analysed module and helpers to navigate and generate code."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.module = analysis.module
        self.program = analysis.program
        self.settings = analysis.settings
        self._parents: dict[int, cst.CSTNode] | None = None
        self._events: dict[tuple[int, type], object] | None = None

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def event(self, node: cst.CSTNode, event_type: type):
        """The analysis event of ``event_type`` about ``node``, if any."""
        if self._events is None:
            self._events = {}
            for ev in self.program.events:
                self._events.setdefault((id(ev.node), type(ev)), ev)
        return self._events.get((id(node), event_type))

    def value(self, node: cst.CSTNode) -> Value | None:
        values = self.program.values
        return values.get(id(node)) if values is not None else None

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        if self._parents is None:
            parents: dict[int, cst.CSTNode] = {}
            for n in walk(self.module):
                for c in children(n):
                    parents[id(c)] = n
            self._parents = parents
        return self._parents.get(id(node))

    def statement_line(self, stmt: cst.CSTNode) -> cst.CSTNode:
        """The node that sits in a block's body for ``stmt`` (a small statement's line, or stmt itself)."""
        parent = self.parent(stmt)
        if isinstance(parent, cst.SimpleStatementLine) and len(parent.body) == 1:
            return parent
        return stmt

    def block_of(self, stmt: cst.CSTNode) -> tuple[cst.CSTNode, int] | None:
        """(block, index) of a statement line in its enclosing block's body."""
        line = self.statement_line(stmt)
        block = self.parent(line)
        body = getattr(block, "body", None)
        if isinstance(body, (list, tuple)):
            for i, s in enumerate(body):
                if s is line:
                    return block, i
        return None

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        cur = self.parent(node)
        while cur is not None and not isinstance(cur, cst.FunctionDef):
            cur = self.parent(cur)
        return cur

    def names_in(self, node: cst.CSTNode) -> set[str]:
        return {n.value for n in walk(node) if isinstance(n, cst.Name)}

    def fresh_name(self, base: str, scope: cst.CSTNode, taken: set[str] | None = None) -> str:
        used = self.names_in(scope) | (taken or set())
        if base not in used:
            return base
        i = 1
        while f"{base}_{i}" in used:
            i += 1
        return f"{base}_{i}"


@dataclass(frozen=True)
class AppliedFix:
    code: str
    fixer: str
    description: str
    safety: str
    line: int


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
    errors: list[FixerError] = field(default_factory=list)
    """Fixers that raised (their findings stay in ``remaining``)."""

    @property
    def changed(self) -> bool:
        return bool(self.applied)


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


def _candidates(analysis: Analysis, errors: list[FixerError]) -> list[_Candidate]:
    """The first plan of each reported finding; the fixers that raise are added to ``errors``."""
    ctx = FixContext(analysis)
    out: list[_Candidate] = []
    for finding, diagnostic in analysis.reported:
        for fixer_cls in fixers_for(finding.rule.code):
            try:
                plan = fixer_cls().plan(finding, ctx)
            except Exception as exc:  # a fixer bug must not stop the run: reported, the next fixer tried
                errors.append(_fixer_error(fixer_cls, diagnostic, exc))
                plan = None
            if plan is not None:
                out.append(_Candidate(finding, diagnostic, fixer_cls, plan))
                break
    return out


_COMPOUND = (cst.BinaryOperation, cst.BooleanOperation, cst.UnaryOperation, cst.Comparison, cst.IfExp, cst.Lambda,
             cst.NamedExpr)
_OPERATOR_PARENTS = (cst.BinaryOperation, cst.BooleanOperation, cst.UnaryOperation, cst.Comparison,
                     cst.ComparisonTarget, cst.Attribute, cst.Subscript, cst.Call, cst.Await)


class _Replace(cst.CSTTransformer):
    """Swap nodes for their replacements, parenthesizing a compound expression put where an operator
    would otherwise bind into it (``y / x[m].mean()`` -> ``y / (s / n)``, not ``y / s / n``)."""

    def __init__(self, replacements: dict[int, Replacement]) -> None:
        super().__init__()
        self.replacements = replacements
        self._parents: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._parents.append(node)
        return True

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
    out: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Comment):
            out.append(current.value)
        stack.extend(reversed(current.children))
    return out


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
    for plan in plans:
        for key, (_, new) in plan.replacements.items():
            replacements[key] = new
        module_statements.extend(s for s in plan.module_statements if s not in module_statements)
        imports.extend(s for s in plan.imports if s not in imports)
    new_module = module.visit(_Replace(replacements)) if replacements else module
    if module_statements or imports:
        new_module = _add_module_statements(new_module, imports, module_statements)
    return new_module.code


def _add_module_statements(module: cst.Module, imports: list[str], statements: list[str]) -> cst.Module:
    body = list(module.body)
    existing = {module.code_for_node(s).strip() for s in body}
    bound = set()
    for s in body:
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                if isinstance(small, cst.Import):
                    bound.update((cst.Module([]).code_for_node(a.name)) for a in small.names)
    insert_at = 0
    for i, s in enumerate(body):
        if isinstance(s, cst.SimpleStatementLine) and all(
                isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body):
            insert_at = i + 1
        elif i == 0 and isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Expr) and \
                isinstance(s.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            insert_at = 1  # after the docstring
    new_imports = [cst.parse_statement(i) for i in imports if i.strip() not in existing
                   and not (i.startswith("import ") and i[len("import "):].strip() in bound)]
    new_stmts = [cst.parse_statement(s) for s in statements if s.strip() not in existing]
    if not new_imports and not new_stmts:
        return module
    import_end = insert_at + len(new_imports)
    body[insert_at:insert_at] = new_imports
    if new_stmts:
        # config statements go after every import (they may need them)
        last_import = max([i + 1 for i, s in enumerate(body) if isinstance(s, cst.SimpleStatementLine)
                           and all(isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body)] + [import_end])
        first = new_stmts[0]
        if isinstance(first, cst.SimpleStatementLine):
            new_stmts[0] = first.with_changes(leading_lines=[cst.EmptyLine()])
        body[last_import:last_import] = new_stmts
    return module.with_changes(body=body)


def _non_overlapping(module: cst.Module, source: str, candidates: list[_Candidate]) -> list[_Candidate]:
    nodes = [old for c in candidates for old, _ in c.plan.replacements.values()]
    ranges = node_ranges(module, source, nodes)
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    chosen = []
    for c in candidates:
        spans = []
        for old, _ in c.plan.replacements.values():
            r = ranges.get(id(old))
            if r is None:
                break
            spans.append(((r.line, r.column), (r.end_line, r.end_column)))
        else:
            if any(a[0] < b[1] and b[0] < a[1] for a in spans for b in taken):
                continue
            taken.extend(spans)
            chosen.append(c)
    return chosen


def _applies(module: cst.Module, source: str, c: _Candidate, comments: Counter[str],
             errors: list[FixerError]) -> str | None:
    """The source with ``c`` applied alone, if that is sound (a plan that fails to apply is reported)."""
    try:
        new_source = _same_ending(module, source, apply_plans(module, [c.plan]))
    except Exception as exc:
        errors.append(_fixer_error(c.fixer, c.diagnostic, exc))
        return None
    return new_source if _sound(new_source, comments) else None


def _same_ending(module: cst.Module, source: str, new_source: str) -> str:
    """libcst drops the final line break of a file whose lines end in a lone carriage return: put it back."""
    if source.endswith("\r") and module.code + "\r" == source:
        return new_source + "\r"
    return new_source


def _sound(code: str, comments: Counter[str]) -> bool:
    """The rewritten module parses and still has every comment of the original (``comments``)."""
    try:
        module = cst.parse_module(code)
    except Exception:
        return False
    return not comments - Counter(_comments(module))


def _allowed(c: _Candidate, unsafe: bool) -> bool:
    return unsafe or c.plan.safety == "safe"


def fix_source(source: str, path: str, settings: Settings, *, unsafe: bool = False) -> FixResult:
    """Apply every allowed fix to ``source`` until nothing more can be fixed."""
    applied: list[AppliedFix] = []
    errors: list[FixerError] = []
    for _ in range(MAX_ROUNDS):
        analysis = analyse(source, path, settings, record_values=True)
        if analysis.module is None:
            break
        candidates = [c for c in _candidates(analysis, errors) if _allowed(c, unsafe)]
        if not candidates:
            break
        chosen = _non_overlapping(analysis.module, source, candidates)
        comments = Counter(_comments(analysis.module))
        try:
            new_source: str | None = apply_plans(analysis.module, [c.plan for c in chosen])
        except Exception:  # one of the plans is broken: found (and reported) below
            new_source = None
        if new_source is None or not _sound(new_source, comments):
            chosen = [c for c in chosen if _applies(analysis.module, source, c, comments, errors) is not None]
            new_source = apply_plans(analysis.module, [c.plan for c in chosen])
        new_source = _same_ending(analysis.module, source, new_source)
        if new_source == source or not chosen:
            break
        applied.extend(AppliedFix(c.finding.rule.code, c.fixer.name, c.plan.description, c.plan.safety,
                                  c.diagnostic.line) for c in chosen)
        source = new_source
    final = analyse(source, path, settings, record_values=True)
    unsafe_left = 0
    if final.module is not None and not unsafe:
        unsafe_left = sum(1 for c in _candidates(final, errors) if c.plan.safety == "unsafe")
    return FixResult(source, applied, final.diagnostics, unsafe_left, _distinct(errors))


def _distinct(errors: list[FixerError]) -> list[FixerError]:
    """One report per fixer bug and file (every round meets it again, at shifted lines): the first."""
    first: dict[tuple[str, str, str], FixerError] = {}
    for e in errors:
        first.setdefault((e.fixer, e.code, e.error), e)
    return list(first.values())


def diagnostics_with_fixes(source: str, path: str, settings: Settings) -> list[Diagnostic]:
    """``check`` diagnostics, each carrying its fix (as text edits) when one exists.

    A fixer that raises is logged (``dynalint.fixing`` logger, as an error) and offers no fix."""
    analysis = analyse(source, path, settings, record_values=True)
    if analysis.module is None:
        return analysis.diagnostics
    errors: list[FixerError] = []
    by_diag = {id(c.diagnostic): c for c in _candidates(analysis, errors)}
    comments = Counter(_comments(analysis.module))
    out = []
    for _finding, diag in analysis.reported:
        c = by_diag.get(id(diag))
        if c is not None:
            new_source = _applies(analysis.module, source, c, comments, errors)
            if new_source is not None and new_source != source:
                diag = _with_fix(diag, Fix(c.plan.safety, c.plan.description, text_edits(source, new_source)))
        out.append(diag)
    for error in _distinct(errors):
        log.error("%s", error.message())
    other = [d for d in analysis.diagnostics if all(d is not r for _, r in analysis.reported)]
    return sorted(out + other, key=Diagnostic.sort_key)


def _with_fix(diag: Diagnostic, fix: Fix) -> Diagnostic:
    from dataclasses import replace

    return replace(diag, fix=fix)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _lines(text: str) -> list[str]:
    """Lines with their ends, split where Python, diagnostics and LSP split them (not at form feeds or
    Unicode separators, as ``str.splitlines`` does)."""
    return _LINE.findall(text)


def text_edits(old: str, new: str) -> tuple[TextEdit, ...]:
    """Line-based edits turning ``old`` into ``new`` (1-based positions, end exclusive)."""
    a = _lines(old)
    b = _lines(new)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        edits.append(TextEdit(line=i1 + 1, column=1, end_line=i2 + 1, end_column=1, new_text="".join(b[j1:j2])))
    return tuple(edits)


def apply_text_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """Apply line-based edits (as produced by :func:`text_edits`) to ``text``."""
    lines = _lines(text)
    for e in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        lines[e.line - 1:e.end_line - 1] = _lines(e.new_text)
    return "".join(lines)
