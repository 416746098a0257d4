"""Suppression comments (flake8 syntax, as ruff reads them).

- ``# noqa`` and ``# noqa: DYN101,DYN2`` on a line suppress what is reported there;
- ``# dynalint: noqa`` (or ``# flake8: noqa``) on a line of its own exempts the whole file, and
  ``# dynalint: noqa: DYN2`` exempts it from those codes only.

The map records which codes each comment really suppressed, so that unused ones can be reported
(DYN003).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from dynalint.core.text_lines import source_lines

_CODES = r"(?P<codes>[A-Z]+[0-9]*(?:[,\s]+[A-Z]+[0-9]*)*)"
_NOQA = re.compile(r"#\s*noqa(?::[\s]?" + _CODES + r")?", re.IGNORECASE)
_FILE_NOQA = re.compile(r"^\s*#\s*(?:dynalint|flake8)\s*:\s*noqa(?::\s*" + _CODES + r")?\s*$", re.IGNORECASE)
_SPLIT = re.compile(r"[,\s]+")


def _split(codes: str) -> frozenset[str]:
    return frozenset(c.upper() for c in _SPLIT.split(codes.strip()) if c)


@dataclass(frozen=True)
class UnusedCode:
    line: int
    column: int
    """1-based column of the code in the comment."""
    code: str


class NoqaMap:
    """Which codes each physical line suppresses (``None`` = everything), and the file-level exemptions."""

    def __init__(self, source: str) -> None:
        self._lines: dict[int, frozenset[str] | None] = {}
        self._text: dict[int, str] = {}
        self._used: dict[int, set[str]] = {}
        self.file_codes: frozenset[str] | None = frozenset()
        """Codes the whole file is exempt from (``None``: every code)."""
        if "noqa" not in source.lower():
            return
        for number, text in enumerate(source_lines(source), start=1):
            if "#" not in text:
                continue
            whole = _FILE_NOQA.match(text)
            if whole is not None:
                codes = whole.group("codes")
                if not codes:
                    self.file_codes = None
                elif self.file_codes is not None:
                    self.file_codes = self.file_codes | _split(codes)
                continue
            m = _NOQA.search(text)
            if m is None:
                continue
            codes = m.group("codes")
            self._lines[number] = None if not codes else _split(codes)
            self._text[number] = text

    def exempt(self, code: str) -> bool:
        """The whole file is exempt from ``code``."""
        return self.file_codes is None or any(code.startswith(c) for c in self.file_codes)

    @property
    def exempt_from_everything(self) -> bool:
        return self.file_codes is None

    def suppresses(self, lines: tuple[int, ...], code: str, *, record: bool = True) -> bool:
        """Whether a comment on one of ``lines`` suppresses ``code``; ``record``: count the comment as
        used (False for a question that reports nothing, such as a fixer's)."""
        if self.exempt(code):
            return True
        for line in lines:
            if line not in self._lines:
                continue
            codes = self._lines[line]
            if codes is None:
                return True
            matched = [c for c in codes if code.startswith(c)]
            if matched:
                if record:
                    self._used.setdefault(line, set()).update(matched)
                return True
        return False

    def unused(self, prefix: str = "DYN") -> list[UnusedCode]:
        """Codes starting with ``prefix`` in ``# noqa: ...`` comments that suppressed nothing (so far)."""
        out = []
        for line, codes in sorted(self._lines.items()):
            if not codes:
                continue
            text = self._text[line]
            m = _NOQA.search(text)
            assert m is not None
            for code in sorted(codes):
                if not code.startswith(prefix) or code in self._used.get(line, ()):
                    continue
                at = re.search(re.escape(code), text[m.start("codes"):], re.IGNORECASE)
                column = m.start("codes") + (at.start() if at else 0) + 1
                out.append(UnusedCode(line, column, code))
        return out
