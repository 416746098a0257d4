"""Parse -> analyse -> rules -> diagnostics, for one file or many."""
from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import libcst as cst

from dynalint.analysis.module_index import build_index
from dynalint.analysis.program import Program
from dynalint.analysis.replay import Tracker, changed_tokens
from dynalint.analysis.project import SourceIndex
from dynalint.core.diagnostics import Diagnostic, FileResult  # noqa: F401 (also imported from here)
from dynalint.core.noqa import NoqaMap
from dynalint.core.positions import Range, node_ranges, ranges_within, statement_lines
from dynalint.rules.base import Finding, Rule, RuleContext, all_rules
from dynalint.config.settings import Settings
from dynalint.core.source import NestingError, dropped_indentation, gc_relaxed, on_large_stack, parse_module
from dynalint.core.source import SourceError, decode_source, read_source  # noqa: F401 (also imported from here)
from dynalint.core.source import TooLargeError

SYNTAX_ERROR_CODE = "DYN000"
IO_ERROR_CODE = "DYN001"
UNUSED_NOQA_CODE = "DYN003"


def io_error(path: str, message: str, settings: Settings) -> list[Diagnostic]:
    """The DYN001 diagnostic of a file that cannot be read or decoded (ruff's E902)."""
    if not settings.enabled(IO_ERROR_CODE):
        return []
    return [Diagnostic(path, 1, 1, 1, 1, IO_ERROR_CODE, "error", message)]


def enabled_rules(settings: Settings) -> list[type[Rule]]:
    return [r for r in all_rules() if settings.enabled(r.code)]


@dataclass
class Analysis:
    """Everything known about one file after checking it."""

    settings: Settings
    module: cst.Module | None = None
    program: Program | None = None
    reported: list[tuple[Finding, Diagnostic]] = field(default_factory=list)
    """Findings that became diagnostics (after select/ignore and noqa)."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """The rules' findings before noqa applies (what :func:`report` turns into ``reported``)."""
    ranges: dict[int, Range] = field(default_factory=dict)
    """Source ranges of the findings' nodes, by ``id(node)``."""
    statement_lines: list[tuple[int, int]] | None = None
    """(first, last) lines of the code of each top-level statement, when :func:`analyse` was asked for
    them (an edit between statements is answered from them)."""
    rule_codes: tuple[str, ...] = ()
    """The codes of the rules that ran (the enabled ones the file's noqa does not exempt)."""
    columns_moved: bool = False
    """Whether columns were moved back after form feeds were cut from indentations."""
    context: RuleContext | None = None
    """The analysis as the rules read it (breaks, ``# noqa`` comments, positions); the fixers read
    the same (:class:`dynalint.fixers.support.context.FixContext` is made from it)."""


def analyse(source: str, path: str, settings: Settings, *, record_values: bool = False,
            project: SourceIndex | None = None, entries: dict[str, dict[str, Any]] | None = None,
            statements: bool = False, parse: bool = False) -> Analysis:
    """Parse, analyse and run the enabled rules on one file's text.

    With a ``project``, names imported from the other checked files resolve to their
    definitions, and ``entries`` (functions of this file that compiled code of other files
    calls, with their arguments) are analysed as well.  ``statements``: also record the lines of
    the top-level statements (``statement_lines``).  ``parse``: parse the text even when the project
    holds a tree of it.
    """
    with gc_relaxed():
        return on_large_stack(_analyse, source, path, settings, record_values, project, entries, statements,
                              parse)


def _analyse(source: str, path: str, settings: Settings, record_values: bool, project: SourceIndex | None,
             entries: dict[str, dict[str, Any]] | None, statements: bool = False, parse: bool = False
             ) -> Analysis:
    result = Analysis(settings)
    cached = project.cached_index(path, source) if project is not None and not parse else None
    try:
        module, parsed = (cached.module, source) if cached is not None else \
            parse_module(source, path, settings.max_file_memory)
    except TooLargeError as exc:
        result.diagnostics = io_error(path, str(exc), settings)
        return result
    except cst.ParserSyntaxError as exc:
        result.diagnostics = _syntax_error(exc, source, path, settings)
        return result
    except NestingError as exc:
        if settings.enabled(SYNTAX_ERROR_CODE):
            result.diagnostics = [Diagnostic(path, exc.line, exc.column, exc.line, exc.column + 1,
                                             SYNTAX_ERROR_CODE, "error",
                                             f"syntax error, file not analysed: {exc.message}")]
        return result
    except RecursionError:
        if settings.enabled(SYNTAX_ERROR_CODE):
            result.diagnostics = [Diagnostic(path, 1, 1, 1, 1, SYNTAX_ERROR_CODE, "error",
                                             "file is too deeply nested to parse")]
        return result
    result = _analysed(module, parsed, path, settings, record_values, project, entries, statements,
                       track=statements)
    if parsed is not source:  # form feeds cut from indentations: columns of the file itself
        result.columns_moved = True
        moved = dropped_indentation(source, parsed)
        shifted = {id(d): _shifted(d, moved) for d in result.diagnostics}  # one object per diagnostic
        result.reported = [(f, shifted.get(id(d)) or _shifted(d, moved)) for f, d in result.reported]
        result.diagnostics = [shifted[id(d)] for d in result.diagnostics]
    return result


def _shifted(d: Diagnostic, moved: dict[int, int]) -> Diagnostic:
    """``d`` with its columns moved right on the lines whose start was cut."""
    if d.line not in moved and d.end_line not in moved:
        return d
    return dataclasses.replace(d, column=d.column + moved.get(d.line, 0),
                               end_column=d.end_column + moved.get(d.end_line, 0))


Positions = Callable[[list[Finding]], dict[int, Range]]
"""The ranges of findings' nodes, by ``id(node)`` (how :func:`analyse_tree` is told where nodes are)."""


def analyse_tree(module: cst.Module, source: str, path: str, settings: Settings, *, record_values: bool = False,
                 project: SourceIndex | None = None, entries: dict[str, dict[str, Any]] | None = None,
                 statements: list[tuple[int, int]] | None = None, positions: Positions | None = None,
                 replay: Program | None = None) -> Analysis:
    """What :func:`analyse` gives for ``source``, from ``module``, a tree of it (the tree an edit of an
    analysed text is spliced into: :mod:`dynalint.engine.incremental`), ``statements``, the lines of its
    top-level statements, and ``positions``, the ranges of the findings' nodes.  ``replay``: the
    program of the analysis ``module`` was spliced from, whose records the edit left valid are
    replayed (:mod:`dynalint.analysis.replay`); the analysis is recorded in turn."""
    with gc_relaxed():
        return on_large_stack(_analysed, module, source, path, settings, record_values, project, entries,
                              statements, positions, True, replay)


def _analysed(module: cst.Module, source: str, path: str, settings: Settings, record_values: bool,
              project: SourceIndex | None, entries: dict[str, dict[str, Any]] | None = None,
              statements: bool | list[tuple[int, int]] = False, positions: Positions | None = None,
              track: bool = False, replay: Program | None = None) -> Analysis:
    """The rules' diagnostics on a parsed module (``statements``: the lines of its top-level statements,
    or whether to find them; ``positions``: how to find the ranges of the findings' nodes; ``track``:
    record the analysis for replaying it after an edit; ``replay``: see :func:`analyse_tree`)."""
    result = Analysis(settings)
    result.module = module
    noqa = NoqaMap(source)
    rules = rules_for(settings, noqa)
    result.rule_codes = tuple(r.code for r in rules)
    if not rules:
        return result
    old = replay.tracker if replay is not None and replay.tracker is not None and replay.tracker.usable else None
    reuse = replay.index if old is not None and replay is not None else None
    if project is not None:
        index = project.index_for(path, module, source, reuse)
    else:
        # (the text the tree was parsed from, which the analysis searches for names: not the tree's code again)
        index = build_index(module, reuse)
        index.source = source
    tracker = None
    if track:
        changed = changed_tokens(reuse, old.shells, old.facts, index, old.nodes) \
            if old is not None and reuse is not None and index is not None else None
        tracker = Tracker(old, replay.memos, changed) if changed is not None and replay is not None else Tracker()
    program = Program(module, scope=settings.scope, values={} if record_values else None, index=index,
                      project=project, entries=entries or {}, entry_patterns=settings.entry_points,
                      settings=settings, tracker=tracker).run()
    result.program = program
    result.context = RuleContext(program, settings, source, noqa)
    findings = run_rules(result.context, rules) if program.events else []
    if positions is not None:
        result.ranges = positions(findings)
    else:
        result.ranges = ranges_within(module, source, [(f.node, f.statement) for f in findings])
    result.findings = one_break_per_line(findings, result.ranges)
    result.context.know_ranges(result.ranges)
    if isinstance(statements, list):
        result.statement_lines = statements
    elif statements:
        result.statement_lines = statement_lines(module, source)
    report(result, source, path, noqa)
    return result


def rules_for(settings: Settings, noqa: NoqaMap) -> list[type[Rule]]:
    """The rules to run on a file: the enabled ones its file-level noqa does not exempt."""
    return [r for r in enabled_rules(settings) if not noqa.exempt(r.code)]


def report(result: Analysis, source: str, path: str, noqa: NoqaMap) -> None:
    """Fill ``result.reported`` and ``result.diagnostics`` from its findings at their ranges: noqa applied,
    unused noqa codes (DYN003) added."""
    settings = result.settings
    result.reported = to_diagnostics(result.findings, result.module, source, path, noqa, ranges=result.ranges)
    result.diagnostics = [d for _, d in result.reported]
    if settings.enabled(UNUSED_NOQA_CODE) and not noqa.exempt(UNUSED_NOQA_CODE):
        result.diagnostics = sorted(result.diagnostics + unused_noqa(noqa, source, path, settings),
                                    key=Diagnostic.sort_key)


def unused_noqa(noqa: NoqaMap, source: str, path: str, settings: Settings) -> list[Diagnostic]:
    """DYN003 for each selected dynalint code of a real ``# noqa:`` comment that suppressed nothing."""
    from dynalint.core.suppress import CommentSites

    comments = CommentSites(source).comments
    out = []
    for u in noqa.unused():
        comment = comments.get(u.line)
        if comment is None or u.column <= comment[0] or u.code == UNUSED_NOQA_CODE:
            continue  # inside a string, not a comment
        if not any(r.code.startswith(u.code) and settings.enabled(r.code) for r in all_rules()):
            continue  # a code this configuration does not check may matter to another (flake8)
        out.append(Diagnostic(path, u.line, u.column, u.line, u.column + len(u.code), UNUSED_NOQA_CODE,
                              "warning", f"unused `noqa` code {u.code}: nothing on this line is reported "
                                         f"as {u.code}"))
    return out


def check_source(source: str, path: str, settings: Settings) -> list[Diagnostic]:
    """All diagnostics for one file's text (raises only on internal errors)."""
    return analyse(source, path, settings).diagnostics


def run_rules(ctx: RuleContext, rules: Iterable[type[Rule]]) -> list[Finding]:
    """The findings of ``rules`` on the analysis ``ctx``, in evaluation order: one finding per statement and
    code, graph breaks excepted (see :func:`one_break_per_line`), and one per node and code."""
    program = ctx.program
    # evaluation order: the position of each event, and of the first event about each node
    order: dict[int, int] = {}
    position: dict[int, int] = {}
    for i, ev in enumerate(program.events):
        order.setdefault(id(ev.node), i)
        position[id(ev)] = i
    found: list[tuple[int, Finding]] = []
    for rule_cls in rules:
        for f in rule_cls().check(ctx):
            at = position[id(f.brk.event)] if f.brk is not None else None
            found.append((at if at is not None else order.get(id(f.node), order.get(id(f.statement), 1 << 30)), f))
    found.sort(key=lambda x: x[0])
    kept: list[Finding] = []
    seen: set[tuple] = set()
    for _, f in found:
        key = (id(f.node), "break") if f.rule.kind == "graph-break" else (id(f.statement), f.rule.code)
        if key in seen or (id(f.node), f.rule.code) in seen:
            continue
        seen.add(key)
        seen.add((id(f.node), f.rule.code))
        kept.append(f)
    return kept


def one_break_per_line(findings: list[Finding], ranges: dict[int, Range]) -> list[Finding]:
    """``findings`` (in evaluation order) with one graph break per line of a statement: the first one.
    Dynamo resumes after the instruction that broke, so each break of a statement that spans lines ends a
    graph of its own, and its log names each line (measured on torch 2.13: the three lines of
    ``return (a[m], b[m], c[m])`` written one per line, the two of ``s = (x.sum().item() + x.max().item())``);
    breaks of one line are one finding, as the log gives them."""
    kept: list[Finding] = []
    seen: set[tuple[int, int]] = set()
    for f in findings:
        if f.rule.kind == "graph-break":
            r = ranges.get(id(f.node))
            key = (id(f.statement), r.line if r is not None else -1)
            if key in seen:
                continue
            seen.add(key)
        kept.append(f)
    return kept


def to_diagnostics(findings: list[Finding], module: cst.Module | None, source: str, path: str,
                   noqa: NoqaMap | None = None, ranges: dict[int, Range] | None = None
                   ) -> list[tuple[Finding, Diagnostic]]:
    """``findings`` as diagnostics at their ranges (found in ``module`` unless given), noqa applied."""
    if ranges is None:
        assert module is not None
        ranges = node_ranges(module, source, [f.node for f in findings])
    noqa = noqa if noqa is not None else NoqaMap(source)
    out: list[tuple[Finding, Diagnostic]] = []
    for f in findings:
        r = ranges.get(id(f.node))
        if r is None:
            continue
        code = f.rule.code
        if noqa.suppresses((r.line, r.end_line), code):
            continue
        out.append((f, Diagnostic(
            path=path, line=r.line, column=r.column, end_line=r.end_line, end_column=r.end_column,
            code=code, kind=f.rule.kind, message=f.message,
            gb_type=f.gb.text if f.gb else None, gb_id=f.gb.id if f.gb else None,
            hint=remedy_hint(f.hint, f.remedy), remedy=f.remedy,
        )))
    out.sort(key=lambda fd: fd[1].sort_key())
    return out


def remedy_hint(hint: str | None, remedy: str | None) -> str | None:
    """The rule's hint, followed by the configuration remedy when a capture flag removes the break."""
    if remedy is None:
        return hint
    flag = (f"set `torch._dynamo.config.{remedy} = True` where the model is compiled: Dynamo then keeps "
            "this operation in the graph (a Python branch on its value or size still breaks)")
    return f"{hint}; or {flag}" if hint else flag[0].upper() + flag[1:]


def _syntax_error(exc: cst.ParserSyntaxError, source: str, path: str, settings: Settings) -> list[Diagnostic]:
    """One DYN000 diagnostic; the position and message come from CPython's parser when it agrees
    that the file is invalid (its messages are the ones users know)."""
    if not settings.enabled(SYNTAX_ERROR_CODE):
        return []
    line, col = exc.raw_line, exc.raw_column + 1
    message = exc.message.strip().splitlines()[0] if exc.message else "invalid syntax"
    try:
        compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as py_exc:
        line, col = py_exc.lineno or line, py_exc.offset or col
        message = py_exc.msg or message
    except (ValueError, RecursionError, MemoryError):
        pass
    return [Diagnostic(path, line, col, line, col + 1, SYNTAX_ERROR_CODE, "error",
                       f"syntax error, file not analysed: {message}")]
