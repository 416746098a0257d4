"""Gitignore patterns, matched in-process.

Reading ``.gitignore`` files ourselves (instead of asking git) means that linting a
repository never runs a program the repository configures (``core.fsmonitor`` and the
like).  The semantics are git's (``gitignore(5)``, ``wildmatch`` with ``WM_PATHNAME``):

* ``*`` and ``?`` never match ``/``; ``[...]`` is a character class (``!`` or ``^`` negates it);
* a leading ``**/`` matches in every directory, a trailing ``/**`` everything inside, ``/**/``
  zero or more directories; any other ``**`` is a plain ``*``;
* a pattern with a ``/`` at its start or in its middle is anchored at its base directory,
  any other pattern matches a name at any depth;
* a trailing ``/`` matches directories only; a leading ``!`` re-includes; ``\\`` escapes.

Paths given to a :class:`Pattern` are relative to its base directory, ``/``-separated.
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


@dataclass(frozen=True)
class Pattern:
    """One gitignore pattern."""

    text: str
    """The line it was read from (trailing spaces removed)."""
    negated: bool
    directory_only: bool
    anchored: bool
    """Matched against the whole relative path (else against the last name only)."""
    regex: re.Pattern[str]

    def match(self, path: str, is_dir: bool = False) -> bool:
        """Whether the pattern matches ``path`` (ignoring negation: see :func:`verdict`)."""
        if self.directory_only and not is_dir:
            return False
        subject = path if self.anchored else path.rsplit("/", 1)[-1]
        return self.regex.fullmatch(subject) is not None


def compile_pattern(line: str) -> Pattern | None:
    """The pattern of one line of a gitignore file; None for a blank line, a comment or a pattern
    that can never match (one ending in a lone backslash, as git treats it)."""
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
    regex = _translate(body)
    if regex is None:
        return None
    return Pattern(text, negated, directory_only, anchored, re.compile(regex, re.DOTALL))


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


def _translate(body: str) -> str | None:
    """A regular expression for a wildmatch pattern (``*`` stops at ``/``), None if malformed."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "*":
            j = i
            while j < n and body[j] == "*":
                j += 1
            at_start = i == 0 or body[i - 1] == "/"
            at_end = j == n or body[j] == "/"
            if j - i >= 2 and at_start and at_end:
                if j == n:
                    out.append(".*")  # trailing /** (or ** alone): everything
                else:
                    out.append("(?:.*/)?")  # **/ : zero or more directories
                    j += 1
            else:
                out.append("[^/]*")
            i = j
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            found = _char_class(body, i)
            if found is None:
                return None  # an unclosed class: git's wildmatch never matches
            klass, i = found
            out.append(klass)
        elif c == "\\":
            if i + 1 >= n:
                return None
            out.append(re.escape(body[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


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
