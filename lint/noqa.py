"""``# noqa`` and ``# noqa: DYN101,DYN2`` suppression comments (flake8 syntax)."""
from __future__ import annotations

import re

_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]*(?:[,\s]+[A-Z]+[0-9]*)*))?", re.IGNORECASE)
_SPLIT = re.compile(r"[,\s]+")


class NoqaMap:
    """Which codes each physical line suppresses (``None`` = everything)."""

    def __init__(self, source: str) -> None:
        self._lines: dict[int, frozenset[str] | None] = {}
        if "noqa" not in source and "NOQA" not in source:
            return
        for number, text in enumerate(source.splitlines(), start=1):
            if "#" not in text:
                continue
            m = _NOQA.search(text)
            if m is None:
                continue
            codes = m.group("codes")
            self._lines[number] = None if not codes else frozenset(
                c.upper() for c in _SPLIT.split(codes.strip()) if c)

    def suppresses(self, lines: tuple[int, ...], code: str) -> bool:
        for line in lines:
            if line not in self._lines:
                continue
            codes = self._lines[line]
            if codes is None or any(code.startswith(c) for c in codes):
                return True
        return False
