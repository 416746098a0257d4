"""Gitignore patterns, matched in-process.

Reading ``.gitignore`` files ourselves (instead of asking git) means that linting a
repository never runs a program the repository configures (``core.fsmonitor`` and the
like).  The semantics are git's (``gitignore(5)``, ``wildmatch`` with ``WM_PATHNAME``):

* ``*`` and ``?`` never match ``/``; ``[...]`` is a character class (``!`` or ``^`` negates it);
* a leading ``**/`` matches in every directory, a trailing ``/**`` everything inside, ``/**/``
  zero or more directories; any other ``**`` is a plain ``*`` (except right after a name's literal
  prefix, see :attr:`Pattern.prefix`);
* a pattern with a ``/`` at its start or in its middle is anchored at its base directory,
  any other pattern matches a name at any depth;
* a trailing ``/`` matches directories only; a leading ``!`` re-includes; ``\\`` escapes.

Paths given to a :class:`Pattern` are relative to its base directory, ``/``-separated.  Matching
never backtracks: its time is linear in the pattern times the path, whatever the pattern.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "\\x21-\\x7e", "lower": "a-z", "print": "\\x20-\\x7e",
    "punct": "!-/:-@\\[-`{-~", "space": " \\t\\n\\r\\f\\v", "upper": "A-Z", "xdigit": "0-9a-fA-F",
}


_ANY_DEPTH = None
"""A ``**`` component: any number of directories."""


@dataclass(frozen=True)
class Pattern:
    """One gitignore pattern."""

    text: str
    """The line it was read from (trailing spaces removed)."""
    negated: bool
    directory_only: bool
    anchored: bool
    """Matched against the whole relative path (else against the last name only)."""
    parts: tuple[re.Pattern[str] | None, ...]
    """One matcher per ``/``-separated component; None for a ``**`` component."""
    prefix: str | None = None
    """Set when the pattern's first wildcard is a ``**`` right after plain characters of a name
    (``a**/x``): git compares that literal prefix first and matches the rest as if it began the
    pattern, so the ``**`` crosses directories.  ``parts`` is then what follows ``**/``."""

    def match(self, path: str, is_dir: bool = False) -> bool:
        """Whether the pattern matches ``path`` (ignoring negation: see :func:`verdict`)."""
        if self.directory_only and not is_dir:
            return False
        if self.prefix is not None:
            return self._match_after_prefix(path)
        if not self.anchored:
            part = self.parts[0]
            return part is None or part.fullmatch(path.rsplit("/", 1)[-1]) is not None
        return _match_components(self.parts, path.split("/"))

    def _match_after_prefix(self, path: str) -> bool:
        if not path.startswith(self.prefix or ""):
            return False
        if not self.parts:  # a trailing ``**``: everything under the prefix
            return True
        rest = path[len(self.prefix or ""):]
        if _match_components(self.parts, rest.split("/")):  # ``**/`` as no directory at all
            return True
        return any(_match_components(self.parts, rest[k + 1:].split("/"))
                   for k, c in enumerate(rest) if c == "/")


def _match_components(parts: tuple[re.Pattern[str] | None, ...], names: list[str]) -> bool:
    """Component by component, keeping every position the pattern can have reached (linear in the
    pattern times the path, whatever the pattern: no backtracking)."""
    reached = {0}
    last = len(parts) - 1
    for i, part in enumerate(parts):
        if not reached:
            return False
        if part is None:  # ``**``: zero or more directories; at the end, one or more names
            first = min(reached) + (1 if i == last else 0)
            reached = set(range(first, len(names) + 1))
        else:
            reached = {j + 1 for j in reached if j < len(names) and part.fullmatch(names[j])}
    return len(names) in reached


def compile_pattern(line: str) -> Pattern | None:
    """The pattern of one line of a gitignore file; None for a blank line, a comment or a pattern
    that can never match (one ending in a lone backslash or with an unclosed ``[``, as git treats it)."""
    text = line.rstrip("\n").removesuffix("\r")
    text = _strip_trailing_spaces(text)
    if not text or text.startswith("#"):
        return None
    body = text
    negated = body.startswith("!")
    if negated:
        body = body[1:]
    directory_only = body.endswith("/") and not body.endswith("\\/")
    if directory_only:
        body = body.rstrip("/")
    if not body:
        return None
    anchored = "/" in body
    if body.startswith("/"):
        body = body[1:]
    tokens = _tokens(body)
    if tokens is None:
        return None
    quirk = _literal_prefix_before_double_star(tokens) if anchored else None
    if quirk is not None:
        prefix, rest = quirk
        parts = tuple(_component(c) for c in _split(rest)) if rest else ()
        return Pattern(text, negated, directory_only, anchored, parts, prefix)
    parts = tuple(_component(c) for c in _split(tokens))
    return Pattern(text, negated, directory_only, anchored, parts)


def _literal_prefix_before_double_star(tokens: list[_Token]) -> tuple[str, list[_Token]] | None:
    """(literal prefix, tokens after ``**/``) when the first wildcard is a ``**`` that follows a plain
    character and ends its component (see :attr:`Pattern.prefix`); else None."""
    first = next((i for i, t in enumerate(tokens) if t[0] in ("*", "=")), None)
    if first is None or first == 0 or tokens[first][0] != "*" or int(tokens[first][1]) < 2:
        return None
    if tokens[first - 1][0] != "c" or (first + 1 < len(tokens) and tokens[first + 1] != _SEPARATOR):
        return None
    prefix = "".join("/" if t == _SEPARATOR else t[1] for t in tokens[:first])
    return prefix, tokens[first + 2:]


def parse_lines(text: str) -> list[Pattern]:
    """The patterns of a gitignore file's text, in order (a UTF-8 byte order mark is skipped)."""
    text = text.removeprefix("\ufeff")
    return [p for p in map(compile_pattern, text.split("\n")) if p is not None]


def verdict(patterns: Iterable[Pattern], path: str, is_dir: bool = False) -> bool | None:
    """True when the last pattern matching ``path`` ignores it, False when it re-includes it, None
    when none matches (the decision then falls to patterns of lower precedence)."""
    result = None
    for pattern in patterns:
        if pattern.match(path, is_dir):
            result = not pattern.negated
    return result


def _strip_trailing_spaces(text: str) -> str:
    """Unescaped trailing spaces are not part of a pattern (``foo\\ `` keeps its space)."""
    end = len(text)
    while end and text[end - 1] == " ":
        backslashes = 0
        i = end - 2
        while i >= 0 and text[i] == "\\":
            backslashes += 1
            i -= 1
        if backslashes % 2:
            break
        end -= 1
    return text[:end]


_Token = tuple[str, ...]
"""``("/",)`` a separator, ``("*", "n")`` a run of n stars, ``("=", regex)`` one character."""
_SEPARATOR: _Token = ("/",)


def _tokens(body: str) -> list[_Token] | None:
    """The tokens of a wildmatch pattern; None if it is malformed (it then never matches)."""
    out: list[_Token] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "/":
            out.append(_SEPARATOR)
            i += 1
        elif c == "*":
            j = i
            while j < n and body[j] == "*":
                j += 1
            out.append(("*", str(j - i)))
            i = j
        elif c == "?":
            out.append(("=", "."))
            i += 1
        elif c == "[":
            found = _char_class(body, i)
            if found is None:
                return None  # an unclosed class: git's wildmatch never matches
            klass, i = found
            out.append(("=", klass))
        elif c == "\\":
            if i + 1 >= n:
                return None
            out.append(_SEPARATOR if body[i + 1] == "/" else ("=", re.escape(body[i + 1])))
            i += 2
        else:
            out.append(("c", c))  # a plain character: part of the literal prefix
            i += 1
    return out


def _split(tokens: list[_Token]) -> list[list[_Token]]:
    components: list[list[_Token]] = [[]]
    for token in tokens:
        if token == _SEPARATOR:
            components.append([])
        else:
            components[-1].append(token)
    return components


def _component(tokens: list[_Token]) -> re.Pattern[str] | None:
    """The matcher of one component: None for ``**`` alone, else a regular expression in which each
    ``*`` but the last takes the shortest text that lets the next fixed part match (a lookahead and
    a back-reference make that choice final, so no input makes the match backtrack)."""
    if len(tokens) == 1 and tokens[0][0] == "*" and int(tokens[0][1]) >= 2:
        return _ANY_DEPTH
    chunks: list[str] = [""]
    for kind, value in tokens:
        if kind == "*":
            if chunks[-1] or len(chunks) == 1:
                chunks.append("")
        else:
            chunks[-1] += re.escape(value) if kind == "c" else value
    if len(chunks) == 1:
        return re.compile(chunks[0], re.DOTALL)
    head, *middle, tail = chunks
    out = [head]
    for k, chunk in enumerate(middle):
        if chunk:
            out.append(f"(?=(?P<g{k}>.*?{chunk}))(?P=g{k})")
    out.append(".*" + tail)
    return re.compile("".join(out), re.DOTALL)


def _char_class(body: str, start: int) -> tuple[str, int] | None:
    """``[...]`` at ``start``: its regex and the index after it; None when it is not closed."""
    i = start + 1
    n = len(body)
    negate = i < n and body[i] in "!^"
    if negate:
        i += 1
    items: list[str] = []
    first = True
    while i < n:
        c = body[i]
        if c == "]" and not first:
            inner = "".join(items)
            return (f"[^/{inner}]" if negate else f"(?!/)[{inner}]") if inner else "(?!)", i + 1
        first = False
        if c == "[" and body.startswith("[:", i):
            close = body.find(":]", i + 2)
            name = body[i + 2:close] if close != -1 else ""
            if name in _POSIX_CLASSES:
                items.append(_POSIX_CLASSES[name])
                i = close + 2
                continue
        if c == "\\" and i + 1 < n:
            i += 1
            c = body[i]
        lo = c
        i += 1
        if i + 1 < n and body[i] == "-" and body[i + 1] != "]":
            hi = body[i + 1]
            i += 2
            if hi == "\\" and i < n:
                hi = body[i]
                i += 1
            if lo <= hi:
                items.append(f"{re.escape(lo)}-{re.escape(hi)}")
            continue
        items.append(re.escape(lo))
    return None
