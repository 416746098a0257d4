"""Source positions for the few nodes that need one.

libcst's ``PositionProvider`` computes a range for every node of the module
(several times the cost of parsing).  Diagnostics need positions for a handful
of nodes, so this module regenerates the code once with a lightweight codegen
state that only counts characters, records offsets for the wanted nodes, and
converts offsets to line/column from the source text.
"""
from __future__ import annotations

import ast
import bisect
import re
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState

from dynalint.core.text_lines import split_lines

_NEWLINE = re.compile(r"\r\n?|\n")


@dataclass
class _OffsetState(CodegenState):
    wanted: set[int] = field(default_factory=set)
    offset: int = 0
    starts: dict[int, int] = field(default_factory=dict)
    spans: dict[int, tuple[int, int]] = field(default_factory=dict)
    last_token: str | None = None
    texts: dict[int, str] | None = None
    """When a dict: the text each wanted node wrote, by ``id`` (see :func:`ranges_within`)."""
    tokens: list[str] = field(default_factory=list)
    token_starts: dict[int, int] = field(default_factory=dict)

    def add_indent_tokens(self) -> None:
        for tok in self.indent_tokens:
            self.add_token(tok)

    def add_token(self, value: str) -> None:
        self.offset += len(value)
        self.last_token = value
        if self.texts is not None and self.starts:
            self.tokens.append(value)

    def pop_trailing_newline(self) -> None:
        # libcst drops the newline written after the last statement of a file that has none;
        # the spans that ended after it end before it
        if self.last_token is None:
            return
        self.offset -= len(self.last_token)
        self.last_token = None
        end = self.offset
        self.spans = {k: (min(a, end), min(b, end)) for k, (a, b) in self.spans.items()}

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self.starts[id(node)] = self.offset
            self.token_starts[id(node)] = len(self.tokens)

    def after_codegen(self, node: cst.CSTNode) -> None:
        key = id(node)
        if key in self.wanted and key in self.starts:
            self.spans[key] = (self.starts.pop(key), self.offset)
            if self.texts is not None:
                self.texts[key] = "".join(self.tokens[self.token_starts.pop(key):])
                if not self.starts:
                    self.tokens.clear()


@dataclass(frozen=True)
class Range:
    line: int
    column: int
    end_line: int
    end_column: int
    """1-based lines and columns (in characters); the end is exclusive."""


class LineIndex:
    """Offset -> (line, column) for a source text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def position(self, offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.line_starts, offset) - 1
        return i + 1, offset - self.line_starts[i] + 1


def node_ranges(module: cst.Module, source: str, nodes: Iterable[cst.CSTNode]) -> dict[int, Range]:
    """Ranges of ``nodes`` (keyed by ``id(node)``), without leading whitespace or parentheses padding."""
    wanted = {id(n) for n in nodes}
    if not wanted:
        return {}
    state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline,
                         wanted=wanted)
    module._codegen(state)
    lines = LineIndex(source)
    return {key: _trimmed(source, lines, start, end) for key, (start, end) in state.spans.items()}


def _trimmed(source: str, lines: LineIndex, start: int, end: int) -> Range:
    """The range of ``source[start:end]``: nodes own some leading/trailing whitespace, trimmed so that
    ranges point at the code."""
    end = min(end, len(source))
    while start < end and source[start] in " \t\r\n\\":
        start += 1
    while end > start and source[end - 1] in " \t\r\n":
        end -= 1
    (l1, c1), (l2, c2) = lines.position(start), lines.position(end)
    return Range(l1, c1, l2, c2)


Block = tuple[Sequence[cst.BaseStatement], Sequence[int], str]
"""The statements of a class's body, the first lines of their code and the body's indentation."""


def ranges_within(module: cst.Module, source: str, wanted: Iterable[tuple[cst.CSTNode, cst.CSTNode]],
                  first_lines: Sequence[int] | Mapping[int, int] | None = None, blocks: Sequence[Block] = ()
                  ) -> dict[int, Range]:
    """The ranges :func:`node_ranges` gives, of nodes each given with a statement that holds it.

    Generating the whole module to count characters costs a third of parsing it; findings sit in a
    few top-level statements.  So only those are generated, each from the offset where it starts:
    its first line of code (from CPython's parser, a tenth of libcst's cost) less its leading blank
    and comment lines.  A node whose text at that range is not the text it wrote (a statement found
    nowhere, a file CPython reads otherwise) gets its range from :func:`node_ranges`.
    ``first_lines``: the first lines of code of the top-level statements (by index), when already known;
    ``blocks``: bodies of classes (or of their methods) whose statements are each generated alone when
    they hold a wanted one (a class is as long as a file, a method is not), the first block holding a
    statement taking it; when not given, those of the top-level classes holding wanted nodes and of
    their methods, from CPython's tree of those classes alone when the statements holding wanted
    nodes are definitions found by their names (:func:`_definition_lines`), else of the file."""
    wanted = list(wanted)
    if not wanted:
        return {}
    groups: dict[tuple[int, int], list[cst.CSTNode]] = {}
    """(0: top-level, else 1 + the block's index; index of the statement) -> the wanted nodes in it."""
    rest = wanted
    for b, block in enumerate(blocks):
        inner = statement_index(block[0], {id(statement) for _, statement in rest})
        for node, statement in rest:
            if id(statement) in inner:
                groups.setdefault((1 + b, inner[id(statement)]), []).append(node)
        rest = [(node, statement) for node, statement in rest if id(statement) not in inner]
    tops = top_statements(module, {id(statement) for _, statement in rest}) if rest else {}
    if first_lines is None and tops and not blocks:
        known = _definition_lines(module, source, sorted(set(tops.values())))
        if known is not None:
            return ranges_within(module, source, wanted, *known)
    if first_lines is None and tops:
        parsed = cpython_tree(source)
        first_lines = None
        if parsed is not None:
            found = block_lines(module.body, parsed.body)
            first_lines = [first for first, _ in found] if found is not None else None
        if first_lines is not None and not blocks:
            made = _class_blocks(module, parsed, sorted(set(tops.values())))
            if made:  # the classes' statements are generated alone
                return ranges_within(module, source, wanted, first_lines, made)
    missing: list[cst.CSTNode] = []
    for node, statement in rest:
        k = tops.get(id(statement))
        if k is None or first_lines is None:
            missing.append(node)
        else:
            groups.setdefault((0, k), []).append(node)
    lines = LineIndex(source)
    out: dict[int, Range] = {}
    for (level, k), nodes in groups.items():
        if level:
            statements, firsts, indent = blocks[level - 1]
            statement, first, indents = statements[k], firsts[k], [indent]
        else:
            assert first_lines is not None
            statement, first, indents = module.body[k], first_lines[k], []
        state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline,
                             wanted={id(n) for n in nodes}, texts={})
        state.indent_tokens = list(indents)
        state.offset = lines.line_starts[first - 1] - _leading_length(module, statement, indents)
        statement._codegen(state)
        for node in nodes:
            span = state.spans.get(id(node))
            if span is None or source[span[0]:span[1]] != state.texts[id(node)]:
                missing.append(node)
            else:
                out[id(node)] = _trimmed(source, lines, *span)
    if missing:
        out.update(node_ranges(module, source, missing))
    return out


def top_statements(module: cst.Module, wanted: set[int]) -> dict[int, int]:
    """``id`` of each wanted statement -> the index of the top-level statement that holds it (a walk of
    the statements and their blocks only: expressions hold none)."""
    return statement_index(module.body, wanted)


def statement_index(statements: Sequence[cst.CSTNode], wanted: set[int]) -> dict[int, int]:
    """``id`` of each wanted statement -> the index of the one of ``statements`` that holds it."""
    out: dict[int, int] = {}
    fields = _BLOCK_FIELDS.get
    for k, top in enumerate(statements):
        stack: list[cst.CSTNode] = [top]
        while stack:
            node = stack.pop()
            if id(node) in wanted:
                out[id(node)] = k
                if len(out) == len(wanted):
                    return out
            tp = type(node)
            names = fields(tp)
            if names is None:
                names = _BLOCK_FIELDS[tp] = tuple(name for name in _BLOCKS if hasattr(tp, name))
            for name in names:
                inner = getattr(node, name)
                it = type(inner)
                if it is list or it is tuple:
                    stack.extend(inner)
                elif inner is None:
                    continue
                elif isinstance(inner, (list, tuple)):
                    stack.extend(inner)
                elif isinstance(inner, cst.CSTNode):
                    stack.append(inner)
    return out


_BLOCKS = ("body", "orelse", "handlers", "finalbody", "cases")
"""The fields through which statements hold statements (and blocks, clauses and cases)."""
_BLOCK_FIELDS: dict[type, tuple[str, ...]] = {}
"""The names of :data:`_BLOCKS` a node type has (looking up one it lacks costs an exception)."""


def cpython_tree(source: str) -> ast.Module | None:
    """CPython's tree of ``source`` (its warnings silenced); None when it does not parse it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _class_blocks(module: cst.Module, parsed: ast.Module | None, tops: list[int]) -> list[Block]:
    """The bodies of the top-level classes among ``tops`` (indices of ``module.body``), with the first
    lines of their statements from ``parsed``, CPython's tree of the same text; each preceded by the
    bodies of its methods (:func:`_method_blocks`)."""
    if parsed is None:
        return []
    at: list[int] = []  # the index in parsed.body of each top-level statement's first statement
    i = 0
    for top in module.body:
        at.append(i)
        i += len(top.body) if isinstance(top, cst.SimpleStatementLine) else 1
    out: list[Block] = []
    for k in tops:
        node = module.body[k]
        if not isinstance(node, cst.ClassDef) or not isinstance(node.body, cst.IndentedBlock) \
                or at[k] >= len(parsed.body):
            continue
        out += _class_block(module, node, parsed.body[at[k]])
    return out


def _class_block(module: cst.Module, node: cst.ClassDef, cls: ast.stmt) -> list[Block]:
    """The body of the class ``node`` (after the bodies of its methods), from ``cls``, CPython's statement
    of the same class; none when they do not agree."""
    found = block_lines(node.body.body, cls.body) if isinstance(cls, ast.ClassDef) \
        and isinstance(node.body, cst.IndentedBlock) else None
    if found is None:
        return []
    indent = node.body.indent or module.default_indent
    return _method_blocks(module, node.body.body, cls.body, indent) + \
        [(node.body.body, [first for first, _ in found], indent)]


_NEXT_CODE = re.compile(r"^[^ \t\f\r\n#)\]}]", re.M)
"""A line that starts with code at the first column (a closing bracket ends a statement, starts none)."""
_OPENS = re.compile(r"^(async[ \t]+)?(def|class)[ \t]+(\w+)", re.M)
"""The lines that open a definition at the first column (``async``, ``def`` or ``class``, its name): read
in one pass for every definition asked about (a pass per name read the file again for each)."""
_WORD = re.compile(r"\w+")
_CUTS = 4
"""Lines starting with code at the first column tried as the end of a class's text (each cut before the
class's end, on a line of a string, makes the text invalid; the next one is tried)."""


def _definition_lines(module: cst.Module, source: str, tops: list[int]
                      ) -> tuple[dict[int, int], list[Block]] | None:
    """The first lines of the top-level statements ``tops`` (indices of ``module.body``), and the bodies
    of the classes among them (:func:`_class_blocks`), without CPython's parse of the whole file (a
    tenth of libcst's, for a few statements): each is a definition whose ``def`` or ``class`` line is
    the one line of the file that opens a definition of its name at the first column, right after the
    text its decorators write; a class's statements are found by CPython's parse of its text alone (up
    to a line starting with code at the first column: one inside the class, in a string, makes that
    text invalid, and the next is tried).  None when one is not found so (the caller parses the file).
    A line found wrong anyway is caught where the text at each range is compared with the text its
    node writes."""
    if "\r" in source and source.count("\r") != source.count("\r\n"):
        return None  # a line ended by a lone carriage return: the first column is not after a newline
    first: dict[int, int] = {}
    blocks: list[Block] = []
    opened: dict[tuple[bool, str, str], list[int]] = {}
    for m in _OPENS.finditer(source):
        opened.setdefault((m.group(1) is not None, m.group(2), m.group(3)), []).append(m.start())
    for k in tops:
        node = module.body[k]
        if type(node) is cst.ClassDef:
            key = (False, "class", node.name.value)
        elif type(node) is cst.FunctionDef:
            key = (node.asynchronous is not None, "def", node.name.value)
        else:
            return None
        found = opened.get(key, []) if _WORD.fullmatch(key[2]) else _opening(source, *key)
        if len(found) != 1:
            return None
        header = found[0]
        written = "".join(map(module.code_for_node, [*node.decorators, *node.lines_after_decorators]))
        start = header - len(written)  # where the decorators' text starts (their leading lines too)
        if start < 0 or source[start:header] != written:
            return None
        at = start + sum(len(module.code_for_node(line)) for line in node.decorators[0].leading_lines) \
            if node.decorators else header  # the first decorator's ``@``
        line = source.count("\n", 0, at) + 1
        first[k] = line
        if type(node) is cst.ClassDef and isinstance(node.body, cst.IndentedBlock):
            parsed, after = None, header
            for _ in range(_CUTS):  # a cut inside the class (a string's line at the first column) is invalid
                cut = _NEXT_CODE.search(source, after + 1)
                after = cut.start() if cut is not None else len(source)
                parsed = cpython_tree("\n" * (line - 1) + source[at:after])
                if parsed is not None or cut is None:
                    break
            cls = parsed.body[0] if parsed is not None and parsed.body else None
            made = _class_block(module, node, cls) if isinstance(cls, ast.ClassDef) and cls.lineno == \
                source.count("\n", 0, header) + 1 and cls.name == node.name.value else []
            if not made:
                return None
            blocks += made
    return first, blocks


def _opening(source: str, asynchronous: bool, keyword: str, name: str) -> list[int]:
    """Where the lines that open a definition of ``name`` at the first column start (a name with a
    character that is no word character to :data:`_OPENS`, a combining mark, is looked for alone)."""
    opens = ("async[ \t]+" if asynchronous else "") + rf"{keyword}[ \t]+{re.escape(name)}\b"
    return [m.start() for m in re.finditer("^" + opens, source, re.M)]


def _method_blocks(module: cst.Module, statements: Sequence[cst.BaseStatement], parsed: Sequence[ast.stmt],
                   indent: str) -> list[Block]:
    """The bodies of the methods among a class's ``statements`` (``parsed``: CPython's statements of the
    same block, ``indent``: the block's indentation), with the first lines of their statements: a
    method is as long as a class is to a file, and a finding's statement of it is generated alone."""
    out: list[Block] = []
    i = 0
    for statement in statements:
        if isinstance(statement, cst.FunctionDef) and isinstance(statement.body, cst.IndentedBlock) \
                and i < len(parsed) and isinstance(parsed[i], (ast.FunctionDef, ast.AsyncFunctionDef)):
            found = block_lines(statement.body.body, parsed[i].body)  # type: ignore[union-attr]
            if found is not None:
                out.append((statement.body.body, [first for first, _ in found],
                            indent + (statement.body.indent or module.default_indent)))
        i += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return out


def statement_lines(module: cst.Module, source: str) -> list[tuple[int, int]] | None:
    """(first, last) 1-based lines of the code of each top-level statement (from a decorator's ``@`` to
    its last token; the comments at the end of its block are not in it), from CPython's parser; None
    when it does not parse the text or counts other statements."""
    tree = cpython_tree(source)
    return block_lines(module.body, tree.body) if tree is not None else None


def block_lines(statements: Sequence[cst.BaseStatement], parsed: Sequence[ast.stmt]
                ) -> list[tuple[int, int]] | None:
    """(first, last) lines of the code of each of libcst's ``statements``, from CPython's ``parsed``
    statements of the same block; None when they count other statements."""
    out: list[tuple[int, int]] = []
    i = 0
    for top in statements:
        n = len(top.body) if isinstance(top, cst.SimpleStatementLine) else 1
        if i + n > len(parsed):
            return None
        first = parsed[i]
        decorators = getattr(first, "decorator_list", None) or []
        last = max(s.end_lineno or s.lineno for s in parsed[i:i + n])
        out.append((min([first.lineno] + [d.lineno for d in decorators]), last))
        i += n
    return out if i == len(parsed) else None


def statement_extents(statements: Sequence[cst.BaseStatement], lines: Sequence[tuple[int, int]],
                      start: int | None, end: int) -> list[int] | None:
    """The 0-based line where the text of each statement of a block starts (its leading blank and
    comment lines included, one line each in the tree), then ``end``, the line after the block's
    statements (where the module's footer starts); ``lines``: the (first, last) 1-based lines of their
    code (:func:`statement_lines`), ``start``: the line where the first one's text must start (None:
    anywhere).  None when they do not follow each other (a tree of another text)."""
    out: list[int] = []
    after = start or 0
    for statement, (first, last) in zip(statements, lines):
        at = first - 1 - leading_line_count(statement)
        if at < after or (not out and start is not None and at != start):
            return None
        out.append(at)
        after = last
    if len(out) != len(statements) or end < after:
        return None
    out.append(end)
    return out


def leading_line_count(statement: cst.CSTNode) -> int:
    """The blank and comment lines a statement writes before its first token (a decorator's ``@``)."""
    count = len(getattr(statement, "leading_lines", ()))
    decorators = getattr(statement, "decorators", ())
    return count + (len(decorators[0].leading_lines) if decorators else 0)


def _leading_length(module: cst.Module, statement: cst.CSTNode, indents: list[str] | None = None) -> int:
    """Characters of the blank and comment lines a statement writes before its first token (inside the
    blocks of ``indents``)."""
    leading = list(getattr(statement, "leading_lines", ()))
    decorators = getattr(statement, "decorators", ())
    if decorators:
        leading += list(decorators[0].leading_lines)
    if not leading:
        return 0
    state = _OffsetState(default_indent=module.default_indent, default_newline=module.default_newline)
    state.indent_tokens = list(indents or ())
    for line in leading:
        line._codegen(state)
    return state.offset


class LineMapping:
    """Line numbers of a rewritten text -> the line numbers of the original (from one line diff).

    A line the rewrite did not touch maps to its original line; a line inside a rewritten block maps
    to the first line of the block it replaced.
    """

    def __init__(self, old: str, new: str) -> None:
        import difflib

        a, b = split_lines(old, keepends=True), split_lines(new, keepends=True)
        self._blocks = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()

    def original(self, line: int) -> tuple[int, bool]:
        """(original line, whether the line is unchanged)."""
        index = line - 1
        for tag, i1, i2, j1, j2 in self._blocks:
            if j1 <= index < j2 or (j1 == j2 == index):
                if tag == "equal":
                    return i1 + (index - j1) + 1, True
                return i1 + 1, False
        return line, False


Block = tuple[int, int, int, int]
"""Lines ``a[i1:i2]`` replaced by ``b[j1:j2]`` (difflib's opcode ranges)."""


def changed_blocks(a: list[str], b: list[str]) -> list[Block]:
    """The blocks of lines that differ between ``a`` and ``b``, in order.

    A fix changes a few places of a large file; difflib without its junk heuristic compares every
    repeated line (blank lines, ``return x``) with every other, a cost that grows with the square of the
    file.  So the equal lines at both ends are trimmed, the lines found once in each side anchor the
    rest (in the order of both: a patience diff), and difflib compares only the stretches between two
    anchors, which are as long as the changes."""
    if a is b:
        return []
    lo, a_hi, b_hi = _trim(a, b)
    if lo == a_hi and lo == b_hi:
        return []
    out: list[Block] = []
    i0, j0 = lo, lo
    for i, j in _anchors(a, b, lo, a_hi, lo, b_hi) + [(a_hi, b_hi)]:
        out.extend(_diff(a, b, i0, i, j0, j))
        i0, j0 = i + 1, j + 1
    return out


def _trim(a: list[str], b: list[str]) -> tuple[int, int, int]:
    """(start of both after the common head, end in ``a`` and end in ``b`` before the common tail).
    The lists are compared a chunk of lines at a time (a comparison of two slices runs in C), then line
    by line inside the first chunk that differs: an edit of one line of a large file costs a few
    dozen slice comparisons, not a Python step per line."""
    n = min(len(a), len(b))
    head = 0
    while head + _CHUNK <= n and a[head:head + _CHUNK] == b[head:head + _CHUNK]:
        head += _CHUNK
    while head < n and a[head] == b[head]:
        head += 1
    i1, j1 = len(a), len(b)
    while i1 - _CHUNK >= head and j1 - _CHUNK >= head and a[i1 - _CHUNK:i1] == b[j1 - _CHUNK:j1]:
        i1, j1 = i1 - _CHUNK, j1 - _CHUNK
    while i1 > head and j1 > head and a[i1 - 1] == b[j1 - 1]:
        i1, j1 = i1 - 1, j1 - 1
    return head, i1, j1


_CHUNK = 64
"""Lines compared at once by :func:`_trim`."""


def _anchors(a: list[str], b: list[str], i0: int, i1: int, j0: int, j1: int) -> list[tuple[int, int]]:
    """Pairs (i, j) with ``a[i] == b[j]`` a line found once in ``a[i0:i1]`` and once in ``b[j0:j1]``,
    the longest chain increasing on both sides."""
    counts: dict[str, list[int]] = {}
    for i in range(i0, i1):
        counts.setdefault(a[i], [0, -1, 0, -1])
        entry = counts[a[i]]
        entry[0] += 1
        entry[1] = i
    for j in range(j0, j1):
        entry = counts.get(b[j])
        if entry is not None:
            entry[2] += 1
            entry[3] = j
    pairs = sorted((e[1], e[3]) for e in counts.values() if e[0] == 1 and e[2] == 1)
    # longest increasing subsequence of the j's (patience sorting)
    tails: list[int] = []
    """Index in ``pairs`` of the last pair of the best chain of each length."""
    tail_js: list[int] = []
    back: list[int] = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pos = bisect.bisect_left(tail_js, j)
        if pos > 0:
            back[k] = tails[pos - 1]
        if pos == len(tails):
            tails.append(k)
            tail_js.append(j)
        else:
            tails[pos], tail_js[pos] = k, j
    chain: list[tuple[int, int]] = []
    k = tails[-1] if tails else -1
    while k >= 0:
        chain.append(pairs[k])
        k = back[k]
    return chain[::-1]


def _diff(a: list[str], b: list[str], i0: int, i1: int, j0: int, j1: int) -> list[Block]:
    """The differing blocks of ``a[i0:i1]`` and ``b[j0:j1]`` (difflib, on the stretch only)."""
    while i0 < i1 and j0 < j1 and a[i0] == b[j0]:
        i0, j0 = i0 + 1, j0 + 1
    while i1 > i0 and j1 > j0 and a[i1 - 1] == b[j1 - 1]:
        i1, j1 = i1 - 1, j1 - 1
    if i0 == i1 and j0 == j1:
        return []
    if i0 == i1 or j0 == j1:
        return [(i0, i1, j0, j1)]
    import difflib

    return [(i0 + p, i0 + q, j0 + r, j0 + s)
            for tag, p, q, r, s in difflib.SequenceMatcher(a=a[i0:i1], b=b[j0:j1], autojunk=False).get_opcodes()
            if tag != "equal"]


def statement_starts(module: cst.Module, source: str) -> list[int]:
    """0-based lines where the module's top-level statements begin (their first line with code or a
    comment), in order: points where the tokenizer is at column 0 outside any bracket or block."""
    ranges = node_ranges(module, source, module.body)
    return [ranges[id(s)].line - 1 for s in module.body if id(s) in ranges]
