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
from dataclasses import dataclass, field, replace
from typing import Hashable

from dynalint.engine import Analysis, report, rules_for
from dynalint.noqa import NoqaMap
from dynalint.positions import Range, changed_blocks, split_lines
from dynalint.rules.base import Finding

_TRIVIA = re.compile(r"[ \t]*(?:#[^\r\n]*)?(?:\r\n|\r|\n)?\Z")
"""A line that holds nothing but spaces and a comment (a form feed makes it a line to parse)."""

MAX_BASELINES = 32
"""Documents remembered (an editor's open files)."""


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


def baseline(analysis: Analysis, text: str, key: Hashable) -> Baseline | None:
    """The baseline of a full analysis of ``text`` made with ``statements=True`` (None when its
    edits must be analysed in full: a file that did not parse, or whose columns were moved)."""
    if analysis.module is None or analysis.columns_moved or not analysis.rule_codes \
            or analysis.statement_lines is None:
        return None
    lines = split_lines(text, keepends=True)
    owner = [-1] * len(lines)
    for k, (first, last) in enumerate(analysis.statement_lines):
        for i in range(first - 1, min(last, len(lines))):
            owner[i] = k
    return Baseline(key, lines, owner, list(analysis.findings), dict(analysis.ranges), analysis.rule_codes)


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
    result = replace(analysis, findings=list(base.findings), ranges=ranges, rule_codes=base.rule_codes)
    report(result, text, path, noqa)
    return result, Baseline(key, lines, owner, base.findings, ranges, base.rule_codes)


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
