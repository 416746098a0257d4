"""Answering an edit of an analysed text from its last analysis, when the edit cannot change it.

An editor sends the whole document after every change, and the language server analyses it
again: on a large file, a parse, the positions of the findings and the analysis of every compiled
function, for an edit that was often a comment or a blank line between two definitions.  Such an
edit changes no statement: the analysis reads statements only (comments inside a function, such
as a ``# type:`` comment, belong to the function's statement; the lines between top-level
statements hold only blank lines and comments), so its findings are the previous ones, each on
the same columns of a line moved by the lines inserted or removed above it.  What comments do
decide, the noqa suppressions and the unused ones (DYN003), is computed again on the new text,
exactly as the full analysis computes it (:func:`dynalint.engine.report`).

An edit is answered this way only when the project around the file, the settings and the
entries the file is analysed with are those of the last analysis, the file-level noqa runs the
same rules, and every changed line lies between top-level statements and is blank or a comment
in both texts; anything else (a statement changed, a line inserted inside a statement, a file
whose columns were moved after form feeds) goes through the full analysis.  The differential test
(``tests/test_incremental.py``) checks on random edits that the answers are the full analysis'.
"""
from __future__ import annotations

import bisect
import re
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Hashable

import libcst as cst

from dynalint.analysis.project import SourceIndex
from dynalint.engine import Analysis, analyse_tree, report, rules_for
from dynalint.noqa import NoqaMap
from dynalint.positions import (
    Range,
    changed_blocks,
    ranges_within,
    split_lines,
    statement_extents,
    statement_lines,
    top_statements,
)
from dynalint.rules.base import Finding
from dynalint.settings import Settings
from dynalint.source import NestingError, check_nesting

_TRIVIA = re.compile(r"[ \t]*(?:#[^\r\n]*)?(?:\r\n|\r|\n)?\Z")
"""A line that holds nothing but spaces and a comment (a form feed makes it a line to parse)."""

MAX_BASELINES = 32
"""Documents remembered (an editor's open files)."""

MAX_WIDENINGS = 3
"""Times the stretch of statements parsed again grows by the next statement (see :func:`_spliced`)."""


@dataclass
class Tree:
    """A tree of a text, and what locates its top-level statements in that text."""

    module: cst.Module = field(repr=False)
    lines: list[str] = field(repr=False)
    """The text the tree was parsed from (codegen gives it back), in lines with their line breaks."""
    statements: list[tuple[int, int]] = field(repr=False)
    """(first, last) 1-based lines of the code of each top-level statement (:func:`statement_lines`)."""
    _extents: list[int] | None = field(default=None, repr=False)
    _measured: bool = False

    def extents(self) -> list[int] | None:
        """The 0-based line where each top-level statement's text starts, then where the footer starts
        (:func:`statement_extents`; computed on first use: answering a comment edit needs none)."""
        if not self._measured:
            self._measured = True
            self._extents = statement_extents(self.module, "".join(self.lines))
        return self._extents


@dataclass
class Baseline:
    """What an analysis of one text leaves for answering edits of it."""

    key: Hashable
    """What else the analysis read (settings, entries, the project on disk): an edit is answered only
    under the same key."""
    lines: list[str] = field(repr=False)
    """The text's lines, with their line breaks."""
    owner: list[int] = field(repr=False)
    """Per 0-based line: the index of the top-level statement whose code holds it, -1 between statements."""
    findings: list[Finding] = field(repr=False)
    ranges: dict[int, Range] = field(repr=False)
    rule_codes: tuple[str, ...] = ()
    statements: list[tuple[int, int]] = field(default_factory=list, repr=False)
    """(first, last) lines of the code of each top-level statement in this text."""
    tree: Tree | None = field(default=None, repr=False)
    """The tree the findings' nodes belong to: of this text, or of an earlier one that differs from it
    by comment and blank lines between statements only (an edit of code is spliced into it)."""


def baseline(analysis: Analysis, text: str, key: Hashable) -> Baseline | None:
    """The baseline of a full analysis of ``text`` made with ``statements=True`` (None when its
    edits must be analysed in full: a file that did not parse, or whose columns were moved)."""
    if analysis.module is None or analysis.columns_moved or not analysis.rule_codes \
            or analysis.statement_lines is None:
        return None
    lines = split_lines(text, keepends=True)
    statements = list(analysis.statement_lines)
    return Baseline(key, lines, _owners(statements, len(lines)), list(analysis.findings), dict(analysis.ranges),
                    analysis.rule_codes, statements, Tree(analysis.module, lines, statements))


def _owners(statements: list[tuple[int, int]], count: int) -> list[int]:
    owner = [-1] * count
    for k, (first, last) in enumerate(statements):
        for i in range(first - 1, min(last, count)):
            owner[i] = k
    return owner


def answered(base: Baseline, analysis: Analysis, text: str, path: str, key: Hashable
             ) -> tuple[Analysis, Baseline] | None:
    """The analysis of ``text`` (an edit of the baseline's text) from the baseline, and the baseline of
    ``text``; None when the edit may change what the analysis finds.  ``analysis``: an empty
    :class:`Analysis` with the settings to report with."""
    if key != base.key:
        return None
    lines = split_lines(text, keepends=True)
    blocks = changed_blocks(base.lines, lines)
    owner: list[int] = []
    moves: list[tuple[int, int]] = []
    """(first old line after a block, lines added before it so far), in order."""
    done, delta = 0, 0
    for i1, i2, j1, j2 in blocks:
        if any(base.owner[i] >= 0 for i in range(i1, i2)):
            return None  # a line of a statement changed
        if i1 == i2 and 0 < i1 < len(base.owner) and base.owner[i1 - 1] == base.owner[i1] >= 0:
            return None  # lines inserted inside a statement
        if not all(_TRIVIA.match(lines[j]) for j in range(j1, j2)):
            return None
        owner.extend(base.owner[done:i1])
        owner.extend([-1] * (j2 - j1))
        done = i2
        delta += (j2 - j1) - (i2 - i1)
        moves.append((i2, delta))
    owner.extend(base.owner[done:])
    noqa = NoqaMap(text)
    settings = analysis.settings
    if tuple(r.code for r in rules_for(settings, noqa)) != base.rule_codes:
        return None
    starts = [m[0] for m in moves]

    def moved(line: int) -> int:
        k = bisect.bisect_right(starts, line - 1) - 1
        return line + (moves[k][1] if k >= 0 else 0)

    ranges = {node: replace(r, line=moved(r.line), end_line=moved(r.end_line))
              for node, r in base.ranges.items()}
    statements = [(moved(first), moved(last)) for first, last in base.statements]
    result = replace(analysis, findings=list(base.findings), ranges=ranges, rule_codes=base.rule_codes)
    report(result, text, path, noqa)
    return result, Baseline(key, lines, owner, base.findings, ranges, base.rule_codes, statements, base.tree)


def reanalysed(base: Baseline, settings: Settings, text: str, path: str, key: Hashable,
               project: SourceIndex | None, entries: dict[str, dict[str, Any]] | None
               ) -> tuple[Analysis, Baseline | None] | None:
    """The analysis of ``text``, an edit of the baseline's text that changes code, from the baseline's
    tree with the top-level statements the edit touched parsed again (see :func:`_spliced`), and the
    baseline of ``text``; None when the edit is analysed in full.

    The spliced tree's statements are those a parse of ``text`` gives (the others are the baseline's
    nodes, untouched text parsed in the same state), so the analysis of the tree is the analysis of
    the text: every compiled function is analysed again, and only positions are reused, those of the
    findings' nodes in statements the edit left, moved by the lines added above them."""
    tree = base.tree
    if key != base.key or tree is None:
        return None
    if project is not None and project.cached_index(path, text) is not None:
        return None  # the full analysis would analyse the tree the project holds
    lines = split_lines(text, keepends=True)
    spliced = _spliced(tree, lines)
    if spliced is None:
        return None
    module, statements = spliced.tree.module, spliced.tree.statements
    first, count, removed = spliced.first, spliced.count, spliced.removed
    after = first + count  # new statements [first, after) replace old [first, first + removed)
    old_first = {k: base.statements[k][0] for k in range(len(base.statements))}

    def shift(k: int) -> int:
        """Lines the code of the new text's unchanged top-level statement ``k`` moved."""
        old = k if k < first else k - count + removed
        return statements[k][0] - old_first[old]

    def positions(findings: list[Finding]) -> dict[int, Range]:
        tops = top_statements(module, {id(f.statement) for f in findings})
        out: dict[int, Range] = {}
        todo = []
        for f in findings:
            k = tops.get(id(f.statement))
            known = base.ranges.get(id(f.node))
            if k is not None and known is not None and not first <= k < after:
                d = shift(k)
                out[id(f.node)] = replace(known, line=known.line + d, end_line=known.end_line + d)
            else:
                todo.append((f.node, f.statement))
        if todo:
            out.update(ranges_within(module, text, todo, first_lines=[a for a, _ in statements]))
        return out

    analysis = analyse_tree(module, text, path, settings, project=project, entries=entries,
                            statements=statements, positions=positions)
    if not analysis.rule_codes:
        return analysis, None
    new_base = Baseline(key, lines, _owners(statements, len(lines)), list(analysis.findings), dict(analysis.ranges),
                        analysis.rule_codes, statements, spliced.tree)
    return analysis, new_base


@dataclass
class _Splice:
    """A tree spliced from another one and a parse of the statements an edit touched (see :func:`_spliced`)."""

    tree: Tree
    first: int
    """Index of the first statement parsed again."""
    count: int
    """Statements parsed again, in the new tree."""
    removed: int
    """Statements they replace, in the old tree."""


def _spliced(tree: Tree, lines: list[str]) -> _Splice | None:
    """The tree of the text ``lines``: ``tree`` with the top-level statements whose text an edit
    touched replaced by a parse of their new text; None when unsure.

    The stretch parsed again runs from the start of a statement's text (its leading comment lines) to
    the start of the next untouched one, and takes in the line on either side of each changed block (a
    line inserted at a boundary may belong to either statement).  The text before it is unchanged, so
    the tokenizer is where it was at its start: between two top-level statements; and the stretch
    parses on its own, so its strings and brackets close inside it.  libcst takes a file's default
    indentation and line break from its first indented block and first line, so the stretch is parsed
    after a small block written with the file's (it goes before the statements the edit may touch:
    the first indented block of the file is before the stretch).  Refused: a stretch with a form feed
    (the parser may cut indentations) or a ``__future__`` import, a continuation line at either end;
    a stretch whose last lines parse as the footer of the module is widened by the next statement."""
    extents = tree.extents()
    old = tree.lines
    blocks = changed_blocks(old, lines)
    if extents is None or not blocks or len(extents) < 2:
        return None
    starts, footer = extents[:-1], extents[-1]
    n = len(starts)
    delta = len(lines) - len(old)
    low = max(min(b[0] for b in blocks) - 1, 0)
    high = min(max(b[1] for b in blocks) + 1, len(old))
    if low < starts[0]:
        return None  # the module's header
    first = bisect.bisect_right(starts, low) - 1
    tail = high > footer
    last = n - 1 if tail else bisect.bisect_right(starts, max(high - 1, low)) - 1
    module = tree.module
    if first <= _first_indented(module):
        return None
    begin = starts[first]
    if old[begin - 1].rstrip("\r\n").endswith("\\"):
        return None
    newline, indent = module.default_newline, module.default_indent
    prefix = f"if 1:{newline}{indent}pass{newline}"
    for _ in range(MAX_WIDENINGS + 1):
        end = len(old) if tail else (starts[last + 1] if last + 1 < n else footer)
        tail = end == len(old)
        region = "".join(lines[begin:end + delta])
        before = "".join(old[begin:end])
        if "\x0c" in region or "__future__" in region or "__future__" in before:
            return None
        if not tail and region and (not region.endswith(("\n", "\r")) or region.rstrip("\r\n").endswith("\\")):
            return None
        text = prefix + region
        try:
            check_nesting(text)
            part = cst.parse_module(text)
        except (cst.ParserSyntaxError, NestingError, RecursionError, MemoryError, ValueError):
            return None
        if part.footer and not tail:
            if last + 1 < n:
                last += 1
            else:
                tail = True
            continue
        break
    else:
        return None
    opening = part.body[0] if part.body else None
    if part.header or part.default_indent != indent or part.default_newline != newline \
            or not isinstance(opening, cst.If) or not isinstance(opening.body, cst.IndentedBlock) \
            or opening.body.footer or opening.orelse is not None:
        return None  # the opening block is not what was written before the stretch, or took its lines
    part_lines = statement_lines(part, text)
    part_extents = statement_extents(part, text)
    if part_lines is None or part_extents is None or part_extents[1] != 2:
        return None
    body = part.body[1:]
    removed = last - first + 1
    statements = tree.statements[:first] + [(a + begin - 2, b + begin - 2) for a, b in part_lines[1:]] + \
        [(a + delta, b + delta) for a, b in tree.statements[last + 1:]]
    new_starts = starts[:first] + [begin + e - 2 for e in part_extents[1:-1]] + \
        [s + delta for s in starts[last + 1:]]
    new_footer = begin + part_extents[-1] - 2 if tail else footer + delta
    spliced = module.with_changes(body=[*module.body[:first], *body, *module.body[last + 1:]],
                                  footer=part.footer if tail else module.footer,
                                  has_trailing_newline=part.has_trailing_newline if tail else module.has_trailing_newline)
    new_tree = Tree(spliced, lines, statements, new_starts + [new_footer], True)
    return _Splice(new_tree, first, len(body), removed)


def _first_indented(module: cst.Module) -> int:
    """The index of the first top-level statement with an indented block: libcst takes the file's
    default indentation from the first indented block, which is in it or before it."""
    for k, statement in enumerate(module.body):
        if isinstance(getattr(statement, "body", None), cst.IndentedBlock):
            return k
    return len(module.body)


class Baselines:
    """The baseline of each document's last analysis, by path (a bounded number of documents)."""

    def __init__(self) -> None:
        self._by_path: dict[str, Baseline] = {}

    def get(self, path: str) -> Baseline | None:
        return self._by_path.get(path)

    def put(self, path: str, base: Baseline) -> None:
        self._by_path.pop(path, None)
        if len(self._by_path) >= MAX_BASELINES:
            self._by_path.pop(next(iter(self._by_path)))
        self._by_path[path] = base

    def drop(self, path: str) -> None:
        self._by_path.pop(path, None)
