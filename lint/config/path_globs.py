"""Path globs as ruff reads them (``exclude``, ``per-file-ignores``): ``*`` and ``?`` stay inside one
path component, ``**`` as a whole component matches any number of directories, ``[...]`` is a
character class (``[!...]`` negated), ``{a,b}`` an alternation and ``\\`` escapes the next character.

:mod:`fnmatch` differs on exactly the cases that matter for paths: its ``*`` crosses ``/`` (so
``tests/*`` would match ``tests/unit/deep/x.py``) and ``**`` is just two stars.
"""
from __future__ import annotations

import functools
import re

_META = "*?[]{}\\"


def escape(text: str) -> str:
    """``text`` as a glob matching itself (for a directory prefixed to a pattern)."""
    return "".join("\\" + c if c in _META else c for c in text)


@functools.lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """The regular expression a whole ``/``-separated path must match."""
    return re.compile(_translate(pattern) + r"\Z", re.DOTALL)


def glob_match(pattern: str, path: str) -> bool:
    """Whether ``path`` (``/``-separated) matches ``pattern`` as a whole."""
    return compile_glob(pattern).match(path) is not None


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    alternatives = 0  # depth of open {..}
    while i < n:
        c = pattern[i]
        if c == "*" and pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/") \
                and (i + 2 == n or pattern[i + 2] == "/"):
            if i + 2 == n:  # a trailing "**": everything below (or, alone, anything)
                out.append(".*")
                i += 2
            else:  # "**/": zero or more directories
                out.append("(?:[^/]*/)*")
                i += 3
            continue
        if c == "*":
            while i < n and pattern[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        elif c == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:end]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                body = body.replace("\\", "\\\\")
                out.append(f"[^/{body}]" if negate else f"(?!/)[{body}]")
                i = end
        elif c == "{":
            alternatives += 1
            out.append("(?:")
        elif c == "}" and alternatives:
            alternatives -= 1
            out.append(")")
        elif c == "," and alternatives:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    out.extend(")" * alternatives)  # an unclosed "{": as if closed at the end
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start`` (-1: none, the ``[`` is literal)."""
    j = start + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":  # a leading "]" is a member
        j += 1
    end = pattern.find("]", j)
    return end
