"""Answering an edit of an analysed text from its last analysis.

An editor sends the whole document after every change, and the language server analyses it
again: on a large file, a parse, the positions of the findings and the analysis of every compiled
function.  Two kinds of edit are answered from the last analysis instead:

- An edit that changes no statement (:func:`answered`), often a comment or a blank line between two
  definitions: the analysis reads statements only (comments inside a function, such as a ``# type:``
  comment, belong to the function's statement; the lines between top-level statements hold only
  blank lines and comments), so its findings are the previous ones, each on the same columns of a
  line moved by the lines inserted or removed above it.
- An edit of code (:func:`reanalysed`): the statements it touched are parsed again, alone (a
  top-level statement, a statement of a class's body such as a method, or statements of a method's
  body, a method's last one aside: :func:`_spliced_in_method`), and spliced into the last tree,
  whose other nodes are immutable and stay; the spliced tree is the tree of the new text, so the
  analysis runs on it as on a parse of the text, replaying what the last analysis recorded of the
  entry points and calls that read nothing the edit changed (:mod:`dynalint.analysis.replay`), and
  the positions of the findings in the statements the edit left are the previous ones, moved by whole
  lines.

What comments decide, the noqa suppressions and the unused ones (DYN003), is computed again on the
new text, exactly as the full analysis computes it (:func:`dynalint.engine.pipeline.report`).

An edit is answered this way only when the project around the file, the settings and the entries
the file is analysed with are those of the last analysis; anything the splice cannot vouch for (a
stretch that does not parse alone, a form feed, an edit of the module's header or of the statements
before the first indented block, a text libcst does not write back, a file nested deeper than the
cheap scan of :func:`dynalint.core.source.needs_exact_check` clears) goes through the full analysis.
The differential test (``tests/test_incremental.py``) checks on random edits that the answers are
the full analysis'.
"""
from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field, replace
from typing import Any, Hashable, Sequence

import libcst as cst

from dynalint.analysis.program import Program
from dynalint.analysis.project import SourceIndex
from dynalint.engine.pipeline import Analysis, analyse_tree, report, rules_for
from dynalint.core.noqa import NoqaMap
from dynalint.core.positions import (
    Block,
    Range,
    block_lines,
    changed_blocks,
    cpython_tree,
    ranges_within,
    statement_extents,
    statement_index,
)
from dynalint.core.text_lines import split_lines
from dynalint.rules.base import Finding
from dynalint.config.settings import Settings
from dynalint.core.source import MAX_SCAN_DEPTH, ScanPart, parse_unchecked, scan_exceeds, scan_part

_TRIVIA = re.compile(r"[ \t]*(?:#[^\r\n]*)?(?:\r\n|\r|\n)?\Z")
"""A line that holds nothing but spaces and a comment (a form feed makes it a line to parse)."""

_CONTINUED = re.compile(r"\\(?:\r\n|\r|\n)?\Z")
"""A line continued by a backslash (a changed one refuses the splice: libcst may not write a lone one back)."""

MAX_BASELINES = 32
"""Documents remembered (an editor's open files)."""

MAX_WIDENINGS = 3
"""Times the stretch of statements parsed again grows by the next statement (see :func:`_spliced`)."""

MAX_SPLICES = 4
"""Stretches of one edit parsed again apart (see :func:`_spliced`)."""

_DEFINITION = re.compile(r"\n[ \t]*(?:async[ \t]+def|def|class|@)\b")
"""Where the text is cut for the nesting scan (see :func:`_scan_clears`): after the line break before a
line that starts a definition."""


@dataclass
class Tree:
    """A tree of a text, and what locates its statements in that text."""

    module: cst.Module = field(repr=False)
    lines: list[str] = field(repr=False)
    """The text the tree was parsed from (codegen gives it back), in lines with their line breaks."""
    statements: list[tuple[int, int]] = field(repr=False)
    """(first, last) 1-based lines of the code of each top-level statement (:func:`statement_lines`)."""
    _inner: dict[int, list[tuple[int, int]] | None] = field(default_factory=dict, repr=False)
    _methods: dict[tuple[int, int], list[tuple[int, int]] | None] = field(default_factory=dict, repr=False)
    _exact: bool | None = None

    def exact(self) -> bool:
        """Whether the tree writes its text back (libcst drops a line holding only a backslash, for
        one): checked once for the tree of a full parse; a spliced tree is made of checked parts."""
        if self._exact is None:
            self._exact = self.module.code == "".join(self.lines)
        return self._exact

    def extents(self) -> list[int] | None:
        """The 0-based line where each top-level statement's text starts, then where the footer starts."""
        module = self.module
        return statement_extents(module.body, self.statements, len(module.header),
                                 len(self.lines) - len(module.footer))

    def inner(self, k: int) -> list[tuple[int, int]] | None:
        """(first, last) lines of the code of each statement of the body of the class at ``k`` (from
        CPython's parser, on first use); None for another statement."""
        if k not in self._inner:
            node = self.module.body[k]
            self._inner[k] = None
            if isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock):
                first, last = self.statements[k]
                parsed = cpython_tree("".join(self.lines[first - 1:last]))
                if parsed is not None and len(parsed.body) == 1 and isinstance(parsed.body[0], ast.ClassDef):
                    found = block_lines(node.body.body, parsed.body[0].body)
                    self._inner[k] = [(a + first - 1, b + first - 1) for a, b in found] if found else None
        return self._inner[k]

    def method_inner(self, k: int, i: int) -> list[tuple[int, int]] | None:
        """(first, last) lines of the code of each statement of the body of the method at ``i`` in the
        body of the class at ``k`` (from CPython's parser, on first use); None for another statement."""
        if (k, i) not in self._methods:
            self._methods[k, i] = None
            node, inner = self.module.body[k], self.inner(k)
            method = node.body.body[i] if inner is not None and isinstance(node, cst.ClassDef) else None
            if isinstance(method, cst.FunctionDef) and isinstance(method.body, cst.IndentedBlock):
                first, last = inner[i]  # type: ignore[index]
                parsed = cpython_tree("class _:\n" + "".join(self.lines[first - 1:last]))
                wrapped = parsed.body[0].body if parsed is not None and len(parsed.body) == 1 \
                    and isinstance(parsed.body[0], ast.ClassDef) else []
                if len(wrapped) == 1 and isinstance(wrapped[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found = block_lines(method.body.body, wrapped[0].body)
                    if found:
                        self._methods[k, i] = [(a + first - 2, b + first - 2) for a, b in found]
        return self._methods[k, i]


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
    program: Program | None = field(default=None, repr=False)
    """The analysis of that tree, whose records an analysis of an edit replays where it can."""
    tops: dict[int, cst.CSTNode] = field(default_factory=dict, repr=False)
    """``id`` of the statement of each finding -> the top-level statement of the tree that holds it."""
    scans: dict[tuple[str, bool], ScanPart] = field(default_factory=dict, repr=False)
    """The nesting scan of each stretch of the text, by (stretch, whether it starts the text): see
    :func:`_scan_clears`."""


def baseline(analysis: Analysis, text: str, key: Hashable) -> Baseline | None:
    """The baseline of a full analysis of ``text`` made with ``statements=True`` (None when its
    edits must be analysed in full: a file that did not parse, or whose columns were moved)."""
    if analysis.module is None or analysis.columns_moved or not analysis.rule_codes \
            or analysis.statement_lines is None:
        return None
    lines = split_lines(text, keepends=True)
    statements = list(analysis.statement_lines)
    return Baseline(key, lines, _owners(statements, len(lines)), list(analysis.findings), dict(analysis.ranges),
                    analysis.rule_codes, statements, Tree(analysis.module, lines, statements), analysis.program)


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
    return result, Baseline(key, lines, owner, base.findings, ranges, base.rule_codes, statements, base.tree,
                            base.program, scans=base.scans)


def reanalysed(base: Baseline, settings: Settings, text: str, path: str, key: Hashable,
               project: SourceIndex | None, entries: dict[str, dict[str, Any]] | None
               ) -> tuple[Analysis, Baseline | None] | None:
    """The analysis of ``text``, an edit of the baseline's text that changes code, from the baseline's
    tree with the statements the edit touched parsed again (see :func:`_spliced`), and the baseline of
    ``text``; None when the edit is analysed in full.

    The spliced tree's statements are those a parse of ``text`` gives (the others are the baseline's
    nodes, untouched text parsed in the same state), so the analysis of the tree is the analysis of
    the text: what the last analysis recorded of entry points and calls that read nothing the edit
    changed is replayed, the rest evaluated (:mod:`dynalint.analysis.replay`); the positions reused
    are those of the findings' nodes in statements the edit left (the same nodes), moved by the lines
    their statement moved."""
    tree = base.tree
    if key != base.key or tree is None:
        return None
    if project is not None and project.cached_index(path, text) is not None:
        return None  # the full analysis would analyse the tree the project holds
    clears, scans = _scan_clears(text, base.scans)
    if not clears:
        return None  # the full analysis asks CPython's parser about the file's nesting first
    lines = split_lines(text, keepends=True)
    new_tree = _spliced(tree, lines)
    if new_tree is None:
        return None
    module, statements = new_tree.module, new_tree.statements
    moved = _Moves(base, tree, new_tree)

    holders: dict[int, cst.CSTNode] = {}

    def positions(findings: list[Finding]) -> dict[int, Range]:
        tops = _top_indices(module, {id(f.statement) for f in findings}, base.tops)
        holders.update((id(f.statement), module.body[tops[id(f.statement)]]) for f in findings
                       if id(f.statement) in tops)
        out: dict[int, Range] = {}
        todo = []
        for f in findings:
            k = tops.get(id(f.statement))
            known = base.ranges.get(id(f.node))
            d = moved.lines(k, f.statement) if k is not None and known is not None else None
            if d is not None and known is not None:
                out[id(f.node)] = replace(known, line=known.line + d, end_line=known.end_line + d)
            else:
                todo.append((f.node, f.statement, k))
        if todo:
            classes = {k for _, _, k in todo if k is not None}
            # a method's statements before its class's (a statement is generated in the first that holds it)
            blocks = [block for k in classes for block in moved.method_blocks(k)] + \
                [block for k in classes if (block := moved.new_block(k)) is not None]
            out.update(ranges_within(module, text, [(n, s) for n, s, _ in todo],
                                     first_lines=[a for a, _ in statements], blocks=blocks))
        return out

    analysis = analyse_tree(module, text, path, settings, project=project, entries=entries,
                            statements=statements, positions=positions, replay=base.program)
    if not analysis.rule_codes:
        return analysis, None
    new_base = Baseline(key, lines, _owners(statements, len(lines)), list(analysis.findings),
                        dict(analysis.ranges), analysis.rule_codes, statements, new_tree, analysis.program,
                        holders, scans)
    return analysis, new_base


Scans = dict[tuple[str, bool], ScanPart]
"""The nesting scan of stretches of a text, by (stretch, whether it starts the text)."""


def _scan_clears(text: str, known: Scans) -> tuple[bool, Scans]:
    """Whether the cheap nesting scan clears ``text`` (:func:`dynalint.core.source.needs_exact_check`
    is false), and the scans of its stretches: the text is cut where a line starts a definition, and
    each stretch is scanned alone, or found in ``known`` (the scans of the text before the edit); a
    stretch that does not end where the scan of the whole text would start afresh (inside a string or
    brackets) goes on into the next one, so the verdict is the scan's of the whole text."""
    if len(text) <= MAX_SCAN_DEPTH:
        return True, {}
    scans: Scans = {}
    parts: list[ScanPart] = []
    begin, first = 0, True
    ends = [m.start() + 1 for m in _DEFINITION.finditer(text)] + [len(text)]
    for end in ends:
        key = (text[begin:end], first)
        part = known.get(key) or scan_part(*key)
        scans[key] = part
        if part.closed or end == len(text):
            parts.append(part)
            begin, first = end, False
    return not scan_exceeds(parts), scans


def _top_indices(module: cst.Module, wanted: set[int], known: dict[int, cst.CSTNode]) -> dict[int, int]:
    """``id`` of each wanted statement -> the index of the top-level statement that holds it: where the
    last analysis found it, when that statement is still in the tree, else by a walk of the statements
    parsed again first, then of the others."""
    where = {id(node): k for k, node in enumerate(module.body)}
    out: dict[int, int] = {}
    for s in wanted:
        top = known.get(s)
        k = where.get(id(top)) if top is not None else None
        if k is not None:
            out[s] = k
    rest = wanted - out.keys()
    if rest:
        kept = {id(top) for top in known.values()}
        order = sorted(range(len(module.body)), key=lambda k: id(module.body[k]) in kept)
        found = statement_index([module.body[k] for k in order], rest)
        out.update((s, order[i]) for s, i in found.items())
    return out


class _Moves:
    """How far the statements a spliced tree took from the baseline's tree moved, found by identity:
    a top-level statement of both trees, or a statement of the body of a class parsed again (whose
    other statements stay)."""

    def __init__(self, base: Baseline, old: Tree, new: Tree) -> None:
        self.base, self.old, self.new = base, old, new
        self.old_tops = {id(node): j for j, node in enumerate(old.module.body)}
        self._old_inner: dict[int, tuple[int, int]] | None = None

    def lines(self, k: int, statement: cst.CSTNode) -> int | None:
        """Lines the code of ``statement`` (in the new tree's top-level statement ``k``) moved since the
        baseline's text; None when it was parsed again."""
        node = self.new.module.body[k]
        base, old, new = self.base, self.old, self.new
        j = self.old_tops.get(id(node))
        if j is not None:
            return new.statements[k][0] - base.statements[j][0]
        if not isinstance(node, cst.ClassDef) or not isinstance(node.body, cst.IndentedBlock):
            return None
        i = statement_index(node.body.body, {id(statement)}).get(id(statement))
        where = self.old_inner().get(id(node.body.body[i])) if i is not None else None
        new_lines, old_lines = new.inner(k), old.inner(where[0]) if where is not None else None
        if where is None or new_lines is None or old_lines is None:
            return None
        j, i_old = where
        # the statements of a top-level statement keep their lines relative to it between the tree's text
        # and the baseline's (which differ by lines between top-level statements only)
        return new_lines[i][0] - (old_lines[i_old][0] + base.statements[j][0] - old.statements[j][0])

    def old_inner(self) -> dict[int, tuple[int, int]]:
        """``id`` of each statement of the body of an old class that the new tree does not hold whole ->
        (the class's index, the statement's index in its body)."""
        if self._old_inner is None:
            kept = {id(node) for node in self.new.module.body}
            self._old_inner = {}
            for j, node in enumerate(self.old.module.body):
                if id(node) not in kept and isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock):
                    for i, statement in enumerate(node.body.body):
                        self._old_inner[id(statement)] = (j, i)
        return self._old_inner

    def new_block(self, k: int) -> Block | None:
        """The body of the new tree's class at ``k`` when the class was parsed again in part (its
        statements' positions are generated one by one)."""
        node = self.new.module.body[k]
        if id(node) in self.old_tops or not isinstance(node, cst.ClassDef) \
                or not isinstance(node.body, cst.IndentedBlock):
            return None
        inner = self.new.inner(k)
        if inner is None:
            return None
        return node.body.body, [a for a, _ in inner], node.body.indent or self.new.module.default_indent

    def method_blocks(self, k: int) -> list[Block]:
        """The bodies of the methods of the new tree's class at ``k`` that were parsed again in part
        (:func:`_spliced_in_method`): their statements' positions are generated one by one."""
        node = self.new.module.body[k]
        if id(node) in self.old_tops or not isinstance(node, cst.ClassDef) \
                or not isinstance(node.body, cst.IndentedBlock):
            return []
        default = self.new.module.default_indent
        out: list[Block] = []
        for (at, i), found in self.new._methods.items():
            method = node.body.body[i] if at == k and found is not None and i < len(node.body.body) else None
            if isinstance(method, cst.FunctionDef) and isinstance(method.body, cst.IndentedBlock) \
                    and id(method) not in self.old_inner():
                indent = (node.body.indent or default) + (method.body.indent or default)
                out.append((method.body.body, [a for a, _ in found], indent))  # type: ignore[union-attr]
        return out


def _spliced(tree: Tree, lines: list[str]) -> Tree | None:
    """The tree of the text ``lines``: ``tree`` with the top-level statements whose text an edit
    touched replaced by a parse of their new text (or, for an edit inside a class, the statements of
    its body the edit touched, or of a method's body: :func:`_spliced_in_method`); None when unsure.
    Changes far apart (a comment typed before a class, the tree being of the text before it, and code
    in a method) are spliced one at a time, the last first.

    The stretch parsed again runs from the start of a statement's text (its leading comment lines) to
    the start of the next untouched one, and takes in the line on either side of each changed block (a
    line inserted at a boundary may belong to either statement).  The text before it is unchanged, so
    the tokenizer is where it was at its start: between two statements of the block; the stretch
    parses on its own, so its strings and brackets close inside it; and its first statement starts
    at the block's indentation, so the statement before it ends there (an indented first line would
    continue it: refused).  libcst takes a file's default indentation and line break from its first
    indented block and first line, so the stretch is parsed after a small block written with the
    file's (the first indented block of the file must be before the stretch), and a class's
    statements inside a class written at column 0, whose body must have the indentation of the class
    they go into (a method's statements inside a method of such a class, written at the method's
    indentation; the lines before them hold the file's first indented one).  Refused too: a stretch
    with a form feed (the parser may cut indentations) or a ``__future__`` import, a continuation line
    at either end, one libcst does not write back; a stretch whose last lines parse as a footer (of the
    module or the class) is widened by the next statement."""
    for _ in range(MAX_SPLICES + 1):  # the last time round finds nothing left to splice
        old = tree.lines
        blocks = changed_blocks(old, lines)
        if not blocks:
            return tree if tree.lines is lines else None
        if any(_CONTINUED.search(lines[j]) for _, _, j1, j2 in blocks for j in range(j1, j2)):
            return None  # a line a backslash continues joins the next one, wherever the stretch ends
        if not tree.exact():
            return None
        extents = tree.extents()
        if extents is None or len(extents) < 2:
            return None
        starts, footer = extents[:-1], extents[-1]
        # the last stretch of blocks whose statements overlap: spliced first (the lines above stay)
        at = len(blocks) - 1
        low, high, first = _touched(blocks[at], starts, len(old))
        while at > 0:
            low_b, high_b, first_b = _touched(blocks[at - 1], starts, len(old))
            if bisect.bisect_right(starts, max(high_b - 1, low_b)) - 1 < first:
                break
            at -= 1
            low, first = low_b, first_b
        if low < starts[0]:
            return None  # the module's header
        i1, j1 = blocks[at][0], blocks[at][2]
        step = lines if at == 0 else old[:i1] + lines[j1:blocks[-1][3]] + old[blocks[-1][1]:]
        tail = high > footer
        last = len(starts) - 1 if tail else bisect.bisect_right(starts, max(high - 1, low)) - 1
        indented = _first_indented(tree.module)
        if first < indented:
            return None
        spliced = None
        if first == last and not tail:
            spliced = _spliced_in_class(tree, step, first, low, high, extents[first + 1], first > indented)
        if spliced is None and first > indented:
            spliced = _spliced_at_top(tree, step, first, last, tail, extents)
        if spliced is None:
            return None
        tree = spliced
    return None


def _touched(block: tuple[int, int, int, int], starts: list[int], count: int) -> tuple[int, int, int]:
    """The lines a changed block touches (with one line on either side: (low, high), end excluded) and
    the first top-level statement they reach (0 for the module's header)."""
    low = max(block[0] - 1, 0)
    high = min(block[1] + 1, count)
    return low, high, max(bisect.bisect_right(starts, low) - 1, 0)


def _spliced_at_top(tree: Tree, lines: list[str], first: int, last: int, tail: bool, extents: list[int]
                    ) -> Tree | None:
    """The top-level statements ``first`` to ``last`` of ``tree`` parsed again (see :func:`_spliced`)."""
    module, old = tree.module, tree.lines
    starts, footer = extents[:-1], extents[-1]
    n = len(starts)
    delta = len(lines) - len(old)
    begin = starts[first]
    prefix = _opening(module)
    for _ in range(MAX_WIDENINGS + 1):
        end = len(old) if tail else (starts[last + 1] if last + 1 < n else footer)
        tail = end == len(old)
        part = _parse_stretch(module, prefix, lines[begin:end + delta], old[begin - 1:end], tail)
        if part is None:
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
    text = prefix + "".join(lines[begin:end + delta])
    parsed = cpython_tree(text)
    part_lines = block_lines(part.body, parsed.body) if parsed is not None else None
    if part_lines is None:
        return None
    body = part.body[1:]
    new_lines = [(a + begin - 2, b + begin - 2) for a, b in part_lines[1:]]
    bounds = statement_extents(body, new_lines, begin, len(lines) - len(part.footer) if tail else end + delta)
    if bounds is None:
        return None  # the stretch's statements do not start where they were written
    old_bounds = starts[first:last + 1] + [starts[last + 1] if last + 1 < n else footer]
    body = _kept(body, bounds, lines, module.body[first:last + 1], old_bounds, old)
    statements = tree.statements[:first] + new_lines + [(a + delta, b + delta) for a, b in tree.statements[last + 1:]]
    ends = part if tail else module  # the module's footer and final line break
    spliced = module.with_changes(body=[*module.body[:first], *body, *module.body[last + 1:]], footer=ends.footer,
                                  has_trailing_newline=ends.has_trailing_newline)
    return Tree(spliced, lines, statements, _exact=True)


def _spliced_in_class(tree: Tree, lines: list[str], k: int, low: int, high: int, end_of_class: int,
                      first_may_change: bool) -> Tree | None:
    """The statements of the body of the class at ``k`` that the changed lines ``low`` to ``high`` touch,
    parsed again (see :func:`_spliced`); ``first_may_change``: whether the body's first statement may
    be parsed again (it holds the file's first indented line otherwise)."""
    module, old = tree.module, tree.lines
    node = module.body[k]
    inner = tree.inner(k)
    if inner is None or not isinstance(node, cst.ClassDef) or not isinstance(node.body, cst.IndentedBlock):
        return None
    body = node.body.body
    block_end = end_of_class - len(node.body.footer)
    starts = statement_extents(body, inner, None, block_end)
    if starts is None or low < starts[0]:
        return None  # the class's header (or a tree of another text)
    starts = starts[:-1]
    m = len(body)
    first = bisect.bisect_right(starts, low) - 1
    last = bisect.bisect_right(starts, max(high - 1, low)) - 1
    if first == last:
        end = starts[first + 1] if first + 1 < m else block_end
        spliced = _spliced_in_method(tree, lines, k, first, low, high, end)
        if spliced is not None:
            return spliced
    if first == 0 and not first_may_change:
        return None
    delta = len(lines) - len(old)
    begin = starts[first]
    newline = module.default_newline
    prefix = _opening(module) + f"class _:{newline}"
    for _ in range(MAX_WIDENINGS + 1):
        end = starts[last + 1] if last + 1 < m else end_of_class
        part = _parse_stretch(module, prefix, lines[begin:end + delta], old[begin - 1:end], end == len(old))
        if part is None or len(part.body) != 2 or part.footer:
            return None
        wrapper = part.body[1]
        if not isinstance(wrapper, cst.ClassDef) or not isinstance(wrapper.body, cst.IndentedBlock) \
                or wrapper.body.indent != node.body.indent:
            return None
        if wrapper.body.footer and last + 1 < m:
            last += 1
            continue
        break
    else:
        return None
    at_end = last + 1 == m
    text = prefix + "".join(lines[begin:end + delta])
    parsed = cpython_tree(text)
    wrapped = parsed.body[1] if parsed is not None and len(parsed.body) == 2 else None
    new = list(wrapper.body.body)
    part_lines = block_lines(new, wrapped.body) if isinstance(wrapped, ast.ClassDef) else None
    if part_lines is None or not new:
        return None
    new_lines = [(a + begin - 3, b + begin - 3) for a, b in part_lines]
    bounds = statement_extents(new, new_lines, begin, end + delta - len(wrapper.body.footer))
    if bounds is None:
        return None  # the stretch's statements do not start where they were written
    if not at_end:
        new = _kept(new, bounds, lines, body[first:last + 1], starts[first:last + 1] + [end], old)
    block = [*body[:first], *new, *body[last + 1:]]
    cls = node.with_changes(body=node.body.with_changes(
        body=block, footer=wrapper.body.footer if at_end else node.body.footer))
    top_first, top_last = tree.statements[k]
    statements = tree.statements[:k] + [(top_first, new_lines[-1][1] if at_end else top_last + delta)] + \
        [(a + delta, b + delta) for a, b in tree.statements[k + 1:]]
    ends = part if end == len(old) else module  # the module's final line break
    spliced = module.with_changes(body=[*module.body[:k], cls, *module.body[k + 1:]],
                                  has_trailing_newline=ends.has_trailing_newline)
    new_tree = Tree(spliced, lines, statements, _exact=True)
    new_tree._inner[k] = inner[:first] + new_lines + [(a + delta, b + delta) for a, b in inner[last + 1:]]
    return new_tree


def _spliced_in_method(tree: Tree, lines: list[str], k: int, i: int, low: int, high: int, end_of_method: int
                       ) -> Tree | None:
    """The statements of the body of the method at ``i`` of the class at ``k`` that the changed lines
    ``low`` to ``high`` touch, parsed again inside a method written at the class's indentation (see
    :func:`_spliced`); None when they reach the method's header or its last statement (whose text
    runs into the lines after the method), or when unsure.  ``end_of_method``: the line where the text
    after the method starts."""
    module, old = tree.module, tree.lines
    node = module.body[k]
    assert isinstance(node, cst.ClassDef) and isinstance(node.body, cst.IndentedBlock)
    method = node.body.body[i]
    inner, method_lines = tree.inner(k), tree.method_inner(k, i)
    if inner is None or method_lines is None or not isinstance(method, cst.FunctionDef) \
            or not isinstance(method.body, cst.IndentedBlock) or method.body.footer:
        return None
    body = method.body.body
    starts = statement_extents(body, method_lines, None, end_of_method)
    if starts is None or low < starts[0]:
        return None  # the method's header (or a tree of another text)
    m = len(body)
    first = bisect.bisect_right(starts, low) - 1
    last = bisect.bisect_right(starts, max(high - 1, low)) - 1
    delta = len(lines) - len(old)
    begin = starts[first]
    newline = module.default_newline
    heading = old[inner[i][0] - 1]
    indent = heading[:len(heading) - len(heading.lstrip(" \t"))]
    prefix = _opening(module) + f"class _:{newline}{indent}def _():{newline}"
    for _ in range(MAX_WIDENINGS + 1):
        if last + 1 >= m:
            return None
        end = starts[last + 1]
        part = _parse_stretch(module, prefix, lines[begin:end + delta], old[begin - 1:end], False)
        if part is None or len(part.body) != 2 or part.footer:
            return None
        wrapper = part.body[1]
        if not isinstance(wrapper, cst.ClassDef) or not isinstance(wrapper.body, cst.IndentedBlock) \
                or wrapper.body.indent != node.body.indent or len(wrapper.body.body) != 1:
            return None
        function = wrapper.body.body[0]
        if not isinstance(function, cst.FunctionDef) or not isinstance(function.body, cst.IndentedBlock) \
                or function.body.indent != method.body.indent:
            return None
        if function.body.footer or wrapper.body.footer:
            last += 1
            continue
        break
    else:
        return None
    parsed = cpython_tree(prefix + "".join(lines[begin:end + delta]))
    wrapped = parsed.body[1] if parsed is not None and len(parsed.body) == 2 else None
    wrapped_function = wrapped.body[0] if isinstance(wrapped, ast.ClassDef) and len(wrapped.body) == 1 \
        else None
    new = list(function.body.body)
    part_lines = block_lines(new, wrapped_function.body) \
        if isinstance(wrapped_function, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if part_lines is None or not new:
        return None
    new_lines = [(a + begin - 4, b + begin - 4) for a, b in part_lines]
    bounds = statement_extents(new, new_lines, begin, end + delta)
    if bounds is None:
        return None  # the stretch's statements do not start where they were written
    new = _kept(new, bounds, lines, body[first:last + 1], starts[first:last + 1] + [end], old)
    edited = method.with_changes(body=method.body.with_changes(body=[*body[:first], *new, *body[last + 1:]]))
    block = node.body.body
    cls = node.with_changes(body=node.body.with_changes(body=[*block[:i], edited, *block[i + 1:]]))
    top_first, top_last = tree.statements[k]
    statements = tree.statements[:k] + [(top_first, top_last + delta)] + \
        [(a + delta, b + delta) for a, b in tree.statements[k + 1:]]
    spliced = module.with_changes(body=[*module.body[:k], cls, *module.body[k + 1:]])
    new_tree = Tree(spliced, lines, statements, _exact=True)
    new_tree._inner[k] = inner[:i] + [(inner[i][0], inner[i][1] + delta)] + \
        [(a + delta, b + delta) for a, b in inner[i + 1:]]
    new_tree._methods[k, i] = method_lines[:first] + new_lines + \
        [(a + delta, b + delta) for a, b in method_lines[last + 1:]]
    return new_tree


def _kept(new: list, bounds: list[int], lines: list[str], old_nodes: Sequence, old_bounds: list[int],
          old: list[str]) -> list:
    """The statements parsed again, each one whose text is that of the old statement at the same place
    from either end of the stretch replaced by the old one (the line taken in on either side of a
    change often brings in a statement the edit left): an analysis of the tree finds it unchanged."""
    out = list(new)
    n, m = len(new), len(old_nodes)
    i = 0
    while i < min(n, m) and lines[bounds[i]:bounds[i + 1]] == old[old_bounds[i]:old_bounds[i + 1]]:
        out[i] = old_nodes[i]
        i += 1
    j = 0
    while j < min(n, m) - i and lines[bounds[n - 1 - j]:bounds[n - j]] == old[old_bounds[m - 1 - j]:old_bounds[m - j]]:
        out[n - 1 - j] = old_nodes[m - 1 - j]
        j += 1
    return out


def _opening(module: cst.Module) -> str:
    """A block written with the module's default indentation and line break, parsed before a stretch
    so that libcst reads the stretch with the module's defaults."""
    newline, indent = module.default_newline, module.default_indent
    return f"if 1:{newline}{indent}pass{newline}"


def _parse_stretch(module: cst.Module, prefix: str, new: list[str], old: list[str], tail: bool
                   ) -> cst.Module | None:
    """The tree of ``prefix`` and the stretch ``new`` of a text of ``module`` (``old``: the old stretch
    after the line before it); None when refused (see :func:`_spliced`) or when it does not parse."""
    region = "".join(new)
    if old and old[0].rstrip("\r\n").endswith("\\"):
        return None  # the line before the stretch continues into it
    if "\x0c" in region or "__future__" in region or any("__future__" in line for line in old):
        return None
    if not tail and region and (not region.endswith(("\n", "\r")) or region.rstrip("\r\n").endswith("\\")):
        return None
    text = prefix + region
    try:
        part = parse_unchecked(text)
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
        return None
    if part.code != text:
        return None  # a text libcst does not write back
    opening = part.body[0] if part.body else None
    if part.header or part.default_indent != module.default_indent or part.default_newline != module.default_newline:
        return None
    if not isinstance(opening, cst.If) or not isinstance(opening.body, cst.IndentedBlock) \
            or len(opening.body.body) != 1 or opening.body.footer or opening.orelse is not None:
        return None  # the opening block took lines of the stretch (indented: the statement before goes on)
    return part


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

    def prepare(self) -> bool:
        """Compute ahead, for one baseline, what the first edit of its text would otherwise compute (see
        :func:`prepared`): for a process with nothing else to do.  False when every one is prepared."""
        for base in reversed(self._by_path.values()):
            if prepared(base):
                return True
        return False


def prepared(base: Baseline) -> bool:
    """Compute what answering the first edit of a full analysis' text computes of the text alone: whether
    its tree writes it back (a code generation of the whole tree, the cost of a third of a parse) and
    the nesting scan of its stretches.  False when both were known."""
    tree = base.tree
    done = False
    if tree is not None and tree._exact is None:
        try:
            tree.exact()
        except Exception:  # (a tree too deep for code generation here) its edits are analysed in full
            tree._exact = False
        done = True
    if not base.scans:
        base.scans = _scan_clears("".join(base.lines), {})[1]
        done = done or bool(base.scans)
    return done
