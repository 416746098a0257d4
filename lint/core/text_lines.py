"""Lines as diagnostics, editors and the language server protocol count them.

A line ends at ``\\n``, ``\\r\\n`` or ``\\r`` only. ``str.splitlines`` also breaks at form feeds,
vertical tabs and Unicode separators, which CPython reads as whitespace inside a line: a file
with a form feed between two functions would have every later line numbered one too high.
"""
from __future__ import annotations

import re

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_OTHER_BREAK = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """Lines broken at ``\\n``, ``\\r\\n`` and ``\\r`` only (a text ending with a line break has an
    empty last line when ``keepends`` is false)."""
    if not keepends:
        return _LINE_BREAK.split(text)
    if not _other_breaks(text):  # str.splitlines breaks at these too
        return text.splitlines(keepends=True)
    out, start = [], 0
    for m in _LINE_BREAK.finditer(text):
        out.append(text[start:m.end()])
        start = m.end()
    if start < len(text):
        out.append(text[start:])
    return out


def _other_breaks(text: str) -> bool:
    """Whether ``text`` holds a character other than ``\n`` and ``\r`` that ``str.splitlines`` breaks at
    (in an ASCII text, five searches for one character are much quicker than one for a class)."""
    if text.isascii():
        return "\v" in text or "\f" in text or "\x1c" in text or "\x1d" in text or "\x1e" in text
    return _OTHER_BREAK.search(text) is not None


def source_lines(text: str) -> list[str]:
    """The lines of a text without their line breaks, numbered from 1 at index 0: what
    ``str.splitlines()`` gives (no empty line after a final line break), broken as lines are counted."""
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines
