"""Reading, decoding and parsing one Python file, the same way for every face (check, fix, the
language server, the flake8 plugin).

libcst's native parser recurses on the C stack: a few thousand nested brackets overflow it and kill
the process, and with it every other file's results.  So a file is parsed only once it is known to
be safe: a cheap scan bounds its nesting, and a file the scan cannot clear is first given to
CPython's own parser, which has C-level limits (more than 200 nested brackets is "too many nested
parentheses").  What CPython rejects is a syntax error; what it accepts is parsed, and analysed, on
a thread with a large stack and a raised recursion limit (see :func:`on_large_stack`).

libcst's tree takes about 2 KiB a token, and more with every enclosing bracket: a generated file of a
few megabytes takes gigabytes.  So before any parser sees a file, :func:`parse_memory` estimates
what its parse would take, and a file over the limit (``max-file-memory``) is refused
(:class:`TooLargeError`) instead.
"""
from __future__ import annotations

import ast
import contextlib
import gc
import io
import itertools
import os
import re
import stat
import sys
import threading
import tokenize
from dataclasses import dataclass
from types import EllipsisType
from typing import TYPE_CHECKING, Callable, Iterator, TypeVar

from dynalint.core.text_lines import split_lines

if TYPE_CHECKING:  # pragma: no cover - libcst is imported where a file is parsed (reading one needs none of it)
    import libcst as cst

MAX_FILE_BYTES = 16 * 1024 * 1024
"""Larger files are not read (DYN001 "file too large"): nothing a person writes comes near it, and
a file without end (a link to ``/dev/zero``) must not exhaust memory."""

MAX_SCAN_DEPTH = 100
"""Bracket depth up to which the scan clears a file without asking CPython's parser (its limit: 200)."""

MAX_SCAN_STATEMENT = 4000
"""Characters of one statement up to which the scan clears it: nesting without brackets (``not``,
unary operators, ``lambda``, ``**``, conditional expressions) takes at least a character a level."""

MAX_AST_DEPTH = 3000
"""Deepest syntax tree analysed: what CPython builds with its default recursion limit (its limit
grows with the recursion limit, which the analysis raises).  libcst's parse time grows faster than
linearly with such depth."""

STACK_BYTES = 512 * 1024 * 1024
"""Stack of the thread that parses and analyses (reserved, only touched pages are used)."""

RECURSION_LIMIT = 50_000
"""Python recursion limit while analysing: long chains (``x + x + ...``) recurse once per link."""

T = TypeVar("T")


class SourceError(Exception):
    """A file that cannot be read or decoded."""


class NestingError(Exception):
    """A file nested more deeply than Python's parser accepts (reported as a syntax error)."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


class NullByteError(NestingError):
    """A NUL byte in the text: Python's parser refuses the whole file (reported as a syntax error
    where the byte is; libcst and CPython 3.11 give no position for it)."""


def check_null_bytes(source: str) -> None:
    """Raise :class:`NullByteError`, at its line and column, for the first NUL byte of ``source``."""
    at = source.find("\0")
    if at >= 0:
        lines = split_lines(source[:at])
        raise NullByteError("source code cannot contain null bytes", len(lines), len(lines[-1]) + 1)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: str) -> bytes:
    """The content of a regular file of at most :data:`MAX_FILE_BYTES`.  Opening never blocks (a
    named pipe is opened non-blocking, then refused); anything but a regular file is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):  # a socket cannot even be opened
            raise SourceError(f"cannot read: {_kind(mode)}, not a Python file") from None
        if isinstance(exc, FileNotFoundError):  # as ruff's E902 says it
            raise SourceError(exc.strerror or "No such file or directory") from None
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(f"cannot read: {_kind(st.st_mode)}, not a Python file")
        if st.st_size > MAX_FILE_BYTES:
            raise SourceError(f"file too large ({st.st_size} bytes; the limit is {MAX_FILE_BYTES})")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:  # it grew while being read
        raise SourceError(f"file too large (over {MAX_FILE_BYTES} bytes)")
    return data


def decode_source(data: bytes) -> str:
    """Bytes to text by the encoding declaration (PEP 263), without a byte-order mark."""
    utf16 = _utf16_order(data)
    if utf16 is not None:
        raise SourceError(f"cannot decode: the file looks like UTF-16 ({utf16}); Python reads source as "
                          "UTF-8 (or an ASCII-compatible encoding it declares): save it as UTF-8")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise SourceError(f"cannot decode: {exc}") from None
    return text[1:] if text.startswith("\ufeff") else text


def _utf16_order(data: bytes) -> str | None:
    """The byte order, in words, when ``data`` looks like UTF-16 text (Python cannot read it as
    source): a UTF-16 byte order mark, or, without one, a zero byte in every other position of
    most of its start (the high bytes of ASCII characters) that decodes as UTF-16."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "little-endian" if data[0] == 0xFF else "big-endian"
    sample = data[:4096]
    sample = sample[:len(sample) - len(sample) % 2]
    if len(sample) < 4 or b"\0" not in sample:
        return None
    for name, high, low in (("little-endian, no byte order mark", sample[1::2], sample[0::2]),
                            ("big-endian, no byte order mark", sample[0::2], sample[1::2])):
        if high.count(0) >= 0.6 * len(high) and low.count(0) <= 0.1 * len(low):
            try:
                # the sample may end inside a surrogate pair: its last unit is left out
                sample[:-2].decode("utf-16-le" if name.startswith("little") else "utf-16-be")
            except UnicodeDecodeError:
                continue
            return name
    return None


def read_source(path: str) -> str:
    """Read a Python file honouring its encoding declaration (PEP 263)."""
    return decode_source(read_bytes(path))


# Comments and string literals: their brackets do not nest.  The alternatives are tried at each
# position in order, as the tokenizer does.  (An f-string's replacement fields are code: the bracket
# depth of the raw text, strings included, bounds their nesting.)
_NOT_CODE = re.compile(
    r"#[^\r\n]*"
    r"|'''(?:[^\\]|\\.)*?'''|\"\"\"(?:[^\\]|\\.)*?\"\"\"|'(?:[^\\'\r\n]|\\.)*'|\"(?:[^\\\"\r\n]|\\.)*\"",
    re.S)
_STRUCTURE = re.compile(r"[(\[{]|[)\]}]|\\\r?\n|\n")
_NOT_BRACKET = re.compile(r"[^()\[\]{}]+")
_DELTA = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
_OPEN = frozenset("([{")


_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")
_OPENING = re.compile(r"[(\[{]")
_CLOSING = re.compile(r"[)\]}]")

PARSE_BYTES_PER_TOKEN = 2048
PARSE_BYTES_PER_NESTED_TOKEN = 1664
PARSE_BYTES_PER_CHARACTER = 16
"""The cost model of :func:`parse_memory`: libcst's parse keeps up to 2 KiB per token (line ends
included), plus up to 1.6 KiB per enclosing bracket of each token (its parse of nested brackets
grows with the square of their depth), plus a few bytes per character (long strings, and the
copies of the text a check holds).  Calibrated on the shapes ``benchmarks/bench_memory.py``
generates (one huge line, many lines, nested brackets and calls, strings, comments, model classes):
the estimate is above libcst's measured peak for each, and a whole ``check`` process on a file just
under the default limit stays under 500 MB."""


def parse_memory(source: str, pieces: list[str] | None | EllipsisType = ...) -> int:
    """An upper estimate of the bytes of memory that parsing ``source`` with libcst takes, from a
    scan that costs a few percent of the parse: its tokens (words, strings, comments and operator
    characters) and the bracket depth of each (``pieces``: :func:`_code_pieces` of ``source``, when
    the caller has them)."""
    # a string or a comment is one token (its brackets nest nothing): one letter each
    if pieces is ...:
        pieces = _code_pieces(source)
    code = "s".join(pieces) if pieces is not None else source
    compact = _compact(code)
    size = len(compact)
    # the sum, over tokens, of the brackets enclosing each: an opening bracket at position p
    # encloses the tokens after it, a closing one ends that
    nesting = (sum(size - m.start() for m in _OPENING.finditer(compact))
               - sum(size - m.start() for m in _CLOSING.finditer(compact)))
    tokens = size + source.count("\n")
    return (PARSE_BYTES_PER_TOKEN * tokens + PARSE_BYTES_PER_NESTED_TOKEN * max(nesting, 0)
            + PARSE_BYTES_PER_CHARACTER * len(source))


MAX_FILE_MEMORY_MB = 400
"""Default of ``max-file-memory``: the most memory (MiB, as :func:`parse_memory` estimates it) that
the parse of one file may take; with the rest of the process a check then stays within 500 MB."""


class TooLargeError(SourceError):
    """A file whose parse would take more memory than allowed (reported as DYN001, not analysed)."""


def check_memory(source: str, limit_mb: int, pieces: list[str] | None | EllipsisType = ...) -> None:
    """Raise :class:`TooLargeError` when parsing ``source`` would take more than ``limit_mb`` MiB
    (0: no limit), before any parser sees it: a generated file of a few megabytes, one line of
    nested literals, takes gigabytes, and a few of them at once would exhaust a machine
    (``pieces``: as for :func:`parse_memory`)."""
    if limit_mb <= 0:
        return
    needed = parse_memory(source, pieces)
    if needed <= limit_mb << 20:
        return
    longest = max(map(len, split_lines(source)), default=0)
    shape = f"{_megabytes(longest)} MB on one line" if longest > len(source) // 2 else \
        f"{_megabytes(len(source))} MB"
    raise TooLargeError(f"too large to analyse: {shape}, whose parse would take about "
                        f"{_megabytes(needed)} MB of memory (the limit is {limit_mb} MB); raise "
                        f"`max-file-memory` to check it")


def _megabytes(n: int) -> str:
    return f"{n / (1 << 20):.2g}" if n < 10 << 20 else str(round(n / (1 << 20)))


def bracket_depth(source: str, peak: int | None | EllipsisType = ...) -> int:
    """The deepest nesting of brackets in ``source``, those of strings and comments counted too (an
    upper bound of the code's; ``peak``: :func:`_peak` of ``source``, when the caller has it)."""
    if peak is ...:
        peak = _peak(source)
    return peak if peak is not None else 0


def _peak(text: str) -> int | None:
    """The highest balance of brackets opened less brackets closed after each bracket of ``text``,
    strings and comments counted too (None: no bracket).  :func:`parse_module` asks it once of a
    text and hands the answer to the checks that need it (``...`` there: not known yet)."""
    return max(itertools.accumulate(map(_DELTA.__getitem__, _NOT_BRACKET.sub("", text))), default=None)


def _code_pieces(text: str) -> list[str] | None:
    """``text`` cut at its comments and string literals (:data:`_NOT_CODE`): the code between them, which
    joined by one letter is the text with each of those a token of one letter, and joined by nothing the
    text without them; None when ``text`` has no ``#`` or quote (nothing to cut).  Asked once of a text
    by :func:`parse_module`, like :func:`_peak`."""
    if not ("#" in text or "'" in text or '"' in text):
        return None
    return _NOT_CODE.split(text)  # (no group in the pattern: the matches are left out)


_ASCII_WORD = {i: "a" for i in range(128) if _WORD.fullmatch(chr(i))}
_ASCII_SPACE = {i: None for i in range(128) if _SPACE.fullmatch(chr(i))}
_LETTERS = re.compile("a+")


def _compact(code: str) -> str:
    """``code`` with each word one letter ``a`` and without its spaces (words first: spaces keep them
    apart).  An ASCII text is mapped character by character: its word characters become ``a``, whose
    runs (the words, and only them) become one, and its spaces go; the regular expressions of words and
    spaces, which look up each character's Unicode class, take twice as long."""
    if not code.isascii():
        return _SPACE.sub("", _WORD.sub("a", code))
    return _LETTERS.sub("a", code.translate(_ASCII_WORD)).translate(_ASCII_SPACE)


CPYTHON_MAX_BRACKETS = 200
"""CPython's tokenizer refuses deeper brackets ("too many nested parentheses"), at once."""


def needs_exact_check(source: str, peak: int | None | EllipsisType = ...,
                      pieces: list[str] | None | EllipsisType = ...) -> bool:
    """Whether the cheap scan cannot clear ``source``: brackets nested more than
    :data:`MAX_SCAN_DEPTH` deep, or a statement longer than :data:`MAX_SCAN_STATEMENT` characters
    (``peak``, ``pieces``: as for :func:`scan_part`)."""
    if len(source) <= MAX_SCAN_DEPTH:
        return False
    return scan_exceeds([scan_part(source, True, peak, pieces)])


@dataclass(frozen=True)
class ScanPart:
    """What the scan of :func:`needs_exact_check` finds in a stretch of a text scanned alone: the scan
    of a text cut into stretches, each ``closed`` but the last, is the scan of the whole text
    (:func:`scan_exceeds`), so an edit of one stretch is scanned again alone."""

    net: int
    """Brackets opened less brackets closed, those of strings and comments counted too."""
    peak: int | None
    """The highest of that balance after each bracket (None: no bracket)."""
    deepest: int
    """The deepest nesting of the brackets of the code (strings and comments left out)."""
    longest: int
    """Characters of the longest statement that ends in the stretch (with the line break before it)."""
    tail: int
    """Characters of the code after the last line break that ends a statement."""
    closed: bool
    """The stretch ends with a line break that ends a statement, and no quote is left outside the
    strings the scan found: the scan of the text after it starts as the scan of a text does."""


def scan_part(text: str, first: bool = False, peak: int | None | EllipsisType = ...,
              pieces: list[str] | None | EllipsisType = ...) -> ScanPart:
    """The scan of ``text`` alone (``first``: the start of the text; else the stretch follows a
    ``closed`` one, whose last line break started the statement).  ``peak`` and ``pieces``:
    :func:`_peak` and :func:`_code_pieces` of ``text``, when the caller has them."""
    if peak is ...:
        peak = _peak(text)
    net = sum(map(text.count, "([{")) - sum(map(text.count, ")]}")) if peak is not None else 0
    if pieces is ...:
        pieces = _code_pieces(text)
    code = "".join(pieces) if pieces is not None else text
    depth = deepest = 0
    start = 0 if first else -1  # where the current statement began
    longest = 0
    last = ""
    for m in _STRUCTURE.finditer(code):
        tok = last = m.group()
        if tok in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
        elif tok == "\n":
            if depth == 0:
                pos = m.start()
                if pos - start > longest:
                    longest = pos - start
                start = pos
        elif tok[0] != "\\":
            depth = depth - 1 if depth else 0
    closed = last == "\n" and depth == 0 and code.endswith("\n") and "'" not in code and '"' not in code
    return ScanPart(net, peak, deepest, longest, len(code) - start, closed)


def scan_exceeds(parts: list[ScanPart]) -> bool:
    """Whether the scan of a text cut into ``parts`` (each ``closed`` but the last) cannot clear it."""
    balance = 0
    for part in parts:
        if part.peak is not None and balance + part.peak > MAX_SCAN_DEPTH:
            return True
        if part.deepest > MAX_SCAN_DEPTH or part.longest > MAX_SCAN_STATEMENT:
            return True
        balance += part.net
    return bool(parts) and parts[-1].tail > MAX_SCAN_STATEMENT


def check_nesting(source: str, path: str = "<unknown>", peak: int | None | EllipsisType = ...,
                  pieces: list[str] | None | EllipsisType = ...) -> None:
    """Raise :class:`NestingError` when CPython's parser rejects ``source`` for its nesting (or for
    any other reason, once the scan has found it deep: then libcst is not given it at all; ``peak``,
    ``pieces``: as for :func:`scan_part`)."""
    if not needs_exact_check(source, peak, pieces):
        return
    try:
        tree = compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        raise NestingError(exc.msg or "invalid syntax", exc.lineno or 1, exc.offset or 1) from None
    except (RecursionError, MemoryError):
        raise NestingError("too deeply nested for Python's parser") from None
    except ValueError as exc:  # null bytes
        raise NestingError(str(exc)) from None
    depth, line = _depth(tree)
    if depth > MAX_AST_DEPTH:
        raise NestingError(f"expressions nested {depth} levels deep (Python's parser, with its default "
                           f"recursion limit, stops at {MAX_AST_DEPTH})", line)


def _depth(tree: ast.AST) -> tuple[int, int]:
    """The depth of the deepest node of ``tree`` and its line (without recursion)."""
    deepest, line = 0, 1
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest, line = depth, getattr(node, "lineno", line)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest, line


_FORM_FEED_INDENT = re.compile(r"^[ \t\f]*\f", re.M)


def dropped_indentation(original: str, parsed: str) -> dict[int, int]:
    """Line -> characters dropped at its start when ``parsed`` is ``original`` with its form-feed
    indentations cut (see :func:`parse_module`): what a column on that line must be moved by."""
    if parsed is original:
        return {}
    return {original.count("\n", 0, m.start()) + 1: len(m.group()) for m in _FORM_FEED_INDENT.finditer(original)}


def parse_module(source: str, path: str = "<unknown>", memory_mb: int = MAX_FILE_MEMORY_MB
                 ) -> tuple[cst.Module, str]:
    """The libcst tree of ``source`` and the text it was parsed from.

    Raises :class:`TooLargeError` for a file whose parse would take more than ``memory_mb`` MiB
    (:func:`check_memory`), :class:`NestingError` for a file too deeply nested for Python (or holding
    a NUL byte), and libcst's ``ParserSyntaxError`` for other syntax errors.  A form feed in an indentation resets it (as in
    CPython's tokenizer); libcst may reject it, so the text up to the last form feed of such an
    indentation is dropped (lines keep their numbers) and the file parsed again.
    """
    check_null_bytes(source)
    peak, pieces = _peak(source), _code_pieces(source)  # once: the checks below share them
    if bracket_depth(source, peak) > CPYTHON_MAX_BRACKETS and bracket_depth(_NOT_CODE.sub("", source)) > \
            CPYTHON_MAX_BRACKETS:  # a syntax error CPython finds at little cost
        check_nesting(source, path, peak, pieces)
    check_memory(source, memory_mb, pieces)  # before CPython's parser too, which takes a sixth of it
    check_nesting(source, path, peak, pieces)
    import libcst as cst

    try:
        return parse_unchecked(source), source
    except cst.ParserSyntaxError:
        if "\f" not in source:
            raise
        text = _FORM_FEED_INDENT.sub("", source)
        if text == source:
            raise
        try:
            return parse_unchecked(text), text
        except cst.ParserSyntaxError:
            pass
        raise


_UNCHECKED_LOCK = threading.Lock()
_UNCHECKED_DEPTH = 0
_CHECKED_INIT: Callable[..., None] | None = None


def parse_unchecked(text: str) -> "cst.Module":
    """``libcst.parse_module(text)``, without the checks each node's constructor runs on its fields.

    The parser builds every node through its dataclass constructor, whose ``__post_init__`` checks the
    fields (a regular expression per whitespace node, and more): a fifth of the parse, and only of use
    for a node a program writes by hand, since the parser's nodes are valid by construction.  They are
    switched off for the parse alone; nodes built meanwhile on another thread go unchecked too (they
    are checked to catch a bug early, not to change what the tree holds).  For the parse alone too,
    each node class's constructor is one that stores the fields and nothing else
    (:func:`_plain_constructors`): the frozen dataclass's own stores each field through
    ``object.__setattr__`` and then calls the check, a tenth of the parse."""
    import libcst as cst

    global _UNCHECKED_DEPTH, _CHECKED_INIT
    with _UNCHECKED_LOCK:
        if _UNCHECKED_DEPTH == 0:
            _CHECKED_INIT = cst.CSTNode.__dict__.get("__post_init__")
            if _CHECKED_INIT is not None:  # a libcst that checks elsewhere is left as it is
                cst.CSTNode.__post_init__ = _no_checks  # type: ignore[method-assign]
            for cls, (fast, _) in _plain_constructors().items():  # (read under the lock: none swapped)
                cls.__init__ = fast  # type: ignore[misc]
        _UNCHECKED_DEPTH += 1
    try:
        return cst.parse_module(text)
    finally:
        with _UNCHECKED_LOCK:
            _UNCHECKED_DEPTH -= 1
            if _UNCHECKED_DEPTH == 0:
                for cls, (_, own) in (_PLAIN or {}).items():
                    cls.__init__ = own  # type: ignore[misc]
                if _CHECKED_INIT is not None:
                    cst.CSTNode.__post_init__ = _CHECKED_INIT  # type: ignore[method-assign]


_PLAIN: "dict[type, tuple[Callable[..., None], Callable[..., None]]] | None" = None


def _plain_constructors() -> "dict[type, tuple[Callable[..., None], Callable[..., None]]]":
    """(plain constructor, own constructor) of each of libcst's node classes whose constructor is the
    one :mod:`dataclasses` wrote, with the same parameters (:func:`_plain_constructor`); made once."""
    global _PLAIN
    if _PLAIN is None:
        import dataclasses

        import libcst as cst

        found: dict[type, tuple[Callable[..., None], Callable[..., None]]] = {}
        stack: list[type] = [cst.CSTNode]
        while stack:
            for cls in stack.pop().__subclasses__():
                stack.append(cls)
                own = cls.__dict__.get("__init__")
                if cls in found or own is None or not dataclasses.is_dataclass(cls) \
                        or getattr(getattr(own, "__code__", None), "co_filename", None) != "<string>":
                    continue  # not a dataclass's own constructor: left as it is
                fast = _plain_constructor(cls, own)
                if fast is not None:
                    found[cls] = (fast, own)
        _PLAIN = found
    return _PLAIN


def _plain_constructor(cls: type, own: Callable[..., None]) -> Callable[..., None] | None:
    """A constructor of ``cls`` that takes the parameters ``own`` (its dataclass constructor) takes, with
    the same defaults, and stores each through its slot; None when a field is not a slot (a class
    without ``__slots__``), keyword-only, or not a parameter."""
    import dataclasses
    import inspect
    import types

    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    parameters = list(inspect.signature(own).parameters.values())[1:]
    if [p.name for p in parameters] != [f.name for f in fields] \
            or any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in parameters):
        return None
    factory = object()
    scope: dict[str, object] = {"_factory": factory}
    head, body = [], []
    for k, f in enumerate(fields):
        slot = next((c.__dict__[f.name] for c in cls.__mro__ if f.name in c.__dict__), None)
        if not isinstance(slot, types.MemberDescriptorType):
            return None
        scope[f"_set{k}"] = slot.__set__
        if f.default is not dataclasses.MISSING:
            scope[f"_default{k}"] = f.default
            head.append(f"{f.name}=_default{k}")
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_make{k}"] = f.default_factory
            head.append(f"{f.name}=_factory")
            body.append(f"    if {f.name} is _factory:\n        {f.name} = _make{k}()")
        else:
            head.append(f.name)
        body.append(f"    _set{k}(self, {f.name})")
    text = f"def __init__(self, {', '.join(head)}):\n" + "\n".join(body or ["    pass"]) + "\n"
    exec(compile(text, "<plain constructor>", "exec"), scope)  # noqa: S102 (made of the dataclass's field names)
    made = scope["__init__"]
    made.__qualname__ = own.__qualname__  # type: ignore[attr-defined]
    return made  # type: ignore[return-value]


def _no_checks(self: object) -> None:
    """A node's ``__post_init__`` while :func:`parse_unchecked` parses."""


GC_THRESHOLDS = (50_000, 20, 20)
"""Collection thresholds while a file is parsed and analysed (CPython's defaults: 700, 10, 10)."""


@contextlib.contextmanager
def gc_relaxed() -> Iterator[None]:
    """Rarer cyclic garbage collections inside (one file's parse and analysis).  A parse allocates a
    node per token, and the project keeps the trees of the files names resolve into: at CPython's
    thresholds the collections those allocations trigger walk the live trees again and again, a
    third of the time of a check.  Cycles the analysis leaves are still collected, in fewer passes."""
    previous = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(GC_THRESHOLDS, previous)))
    try:
        yield
    finally:
        gc.set_threshold(*previous)


COLLECT_EVERY = 100
"""Files analysed between two garbage collections of a run over many files (see :class:`Collections`)."""


class Collections:
    """Cyclic garbage collection every :data:`COLLECT_EVERY` files of a run (``every``), not on CPython's
    schedule, or when the process has nothing else to do (:meth:`collect`).

    The run keeps the trees of the files names resolve into, and every tree parsed on top of them makes
    CPython collect the whole heap again, a fifth of the run's time.  An analysis leaves few cycles (its
    tree and index are freed as it ends: :meth:`~dynalint.analysis.module_index.ModuleIndex.dispose`),
    and those wait for the next collection.  ``with Collections() as c:``
    then ``c.done()`` after each file; a process that runs files one at a time (a pool's worker) calls
    :meth:`start` once and :meth:`done` after each.  ``before_collect``: called before each collection
    (what lets go of trees kept for later analyses, which the collection would otherwise walk)."""

    def __init__(self, before_collect: Callable[[], None] | None = None, every: int | None = None) -> None:
        self.files = 0
        self._collected_at = 0
        self._every = every
        self._enabled = False
        self._before_collect = before_collect

    def start(self) -> "Collections":
        self._enabled = gc.isenabled()
        gc.disable()
        return self

    def done(self) -> None:
        self.files += 1
        if self.files - self._collected_at >= (self._every or COLLECT_EVERY):
            self.collect()

    def collect(self) -> bool:
        """Collect now, when a file was analysed since the last collection (what a process that waits
        for work does while it waits); whether it collected."""
        if self.files == self._collected_at:
            return False
        self._collected_at = self.files
        if self._before_collect is not None:
            self._before_collect()
        gc.collect()
        return True

    def __enter__(self) -> "Collections":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self._enabled:
            gc.enable()


def on_large_stack(fn: Callable[..., T], *args, **kwargs) -> T:
    """``fn(*args, **kwargs)`` on a thread with a :data:`STACK_BYTES` stack and a recursion limit of
    at least :data:`RECURSION_LIMIT`: deep but valid code is analysed instead of overflowing the
    stack.  Exceptions propagate; a call already on such a thread runs directly."""
    global _RUNNING, _SAVED_LIMIT
    if getattr(_LOCAL, "large", False):
        return fn(*args, **kwargs)
    outcome: list = []

    def run() -> None:
        _LOCAL.large = True
        try:
            outcome.append((True, fn(*args, **kwargs)))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append((False, exc))

    with _STACK_LOCK:
        if _RUNNING == 0:
            _SAVED_LIMIT = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_SAVED_LIMIT, RECURSION_LIMIT))
        _RUNNING += 1
        previous = threading.stack_size()
        try:
            threading.stack_size(STACK_BYTES)
            thread = threading.Thread(target=run, name="dynalint-analysis", daemon=True)
            thread.start()
        except (RuntimeError, ValueError, MemoryError):  # no such stack here (strict overcommit)
            thread = None
        finally:
            threading.stack_size(previous)
        if thread is None:
            _RUNNING -= 1
            if _RUNNING == 0:
                sys.setrecursionlimit(_SAVED_LIMIT)
    if thread is None:
        return fn(*args, **kwargs)
    try:
        thread.join()
    finally:
        with _STACK_LOCK:
            _RUNNING -= 1
            if _RUNNING == 0:
                sys.setrecursionlimit(_SAVED_LIMIT)
    ok, value = outcome[0]
    if ok:
        return value
    raise value


_LOCAL = threading.local()
_STACK_LOCK = threading.Lock()
_RUNNING = 0
_SAVED_LIMIT = 1000


IMPORT_LINE = re.compile(
    r"^[ \t]*(?:from[ \t]+([.\w]+)[ \t]+import[ \t]*(\([^)]*\)|[\w \t,*]+)"
    r"|import[ \t]+([.\w]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[.\w]+(?:[ \t]+as[ \t]+\w+)?)*))",
    re.MULTILINE)
"""``from M import a, b`` (also parenthesised over several lines) and ``import M, N as n``."""
