"""Output formats for ``dynalint check``."""
from __future__ import annotations

import json
from collections import Counter
from typing import Callable, TextIO

from dynalint.core.diagnostics import Diagnostic

Reporter = Callable[[list[Diagnostic], TextIO], None]


def fix_marker(d: Diagnostic) -> str:
    """ruff's marks: ``[*]`` a fix ``dynalint fix`` applies, ``[-]`` one it applies with ``--unsafe-fixes``."""
    if d.fix is None:
        return ""
    return "[*] " if d.fix.safety == "safe" else "[-] "


FILE_LEVEL_CODES = ("DYN001",)
"""Codes about a whole file (it cannot be read): no line to point at, as ruff prints E902."""


def location(d: Diagnostic) -> str:
    """``path:line:col``, ``nb.ipynb:cell 2:3:8`` in a notebook, ``path`` for a file that cannot be
    read (as ruff prints them)."""
    if d.code in FILE_LEVEL_CODES:
        return d.path
    cell = f"cell {d.cell}:" if d.cell is not None else ""
    return f"{d.path}:{cell}{d.line}:{d.column}"


def text(diagnostics: list[Diagnostic], out: TextIO, *, show_fixes: bool = False) -> None:
    """``path:line:col: CODE message`` (flake8 style), then the hint as an indented ``help:`` line (as
    ruff prints it); ``show_fixes`` marks the fixable ones."""
    for d in diagnostics:
        mark = fix_marker(d) if show_fixes else ""
        out.write(f"{location(d)}: {d.code} {mark}{d.message}\n")
        if d.hint:
            out.write(f"  help: {' '.join(d.hint.split())}\n")
    if show_fixes:
        safe = sum(d.fix is not None and d.fix.safety == "safe" for d in diagnostics)
        unsafe = sum(d.fix is not None and d.fix.safety == "unsafe" for d in diagnostics)
        if safe:
            out.write(f"[*] {safe} fixable with `dynalint fix`\n")
        if unsafe:
            out.write(f"[-] {unsafe} fixable with `dynalint fix --unsafe-fixes`\n")


def json_array(diagnostics: list[Diagnostic], out: TextIO) -> None:
    json.dump([d.to_json() for d in diagnostics], out, indent=1)
    out.write("\n")


#: As in SARIF and the language server: recompile hazards cost only when the value changes.
GITHUB_LEVELS = {"graph-break": "warning", "recompile": "notice", "error": "error", "warning": "warning"}


def github(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """GitHub Actions workflow commands: annotations on the pull request diff."""

    def esc(value: str, prop: bool = False) -> str:
        value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return value.replace(":", "%3A").replace(",", "%2C") if prop else value

    for d in diagnostics:
        level = GITHUB_LEVELS.get(d.kind, "warning")
        title = f"{d.code} ({d.kind})"
        out.write(f"::{level} file={esc(d.path, True)},line={d.line},col={d.column},endLine={d.end_line},"
                  f"endColumn={d.end_column},title={esc(title, True)}::{esc(d.message)}\n")


def sarif(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """SARIF 2.1.0, for code-scanning uploads."""
    from dynalint.adapters.sarif import sarif_log  # loads every rule and fixer: only when asked for

    json.dump(sarif_log(diagnostics), out, indent=1)
    out.write("\n")


def statistics(diagnostics: list[Diagnostic], out: TextIO, fmt: str = "text") -> None:
    """How often each code was found, most frequent first (``--statistics``, as ruff prints it); with
    fixes known, ``[*]``: a fix ``dynalint fix`` applies, ``[-]``: only fixes ``--unsafe-fixes`` applies.
    Each row counts the findings Dynamo's capture flags remove; the text ends with their total."""
    from dynalint.rules.base import get_code

    counts = Counter(d.code for d in diagnostics)
    safe = Counter(d.code for d in diagnostics if d.fix is not None and d.fix.safety == "safe")
    unsafe = Counter(d.code for d in diagnostics if d.fix is not None and d.fix.safety == "unsafe")
    flagged = Counter(d.code for d in diagnostics if d.kind == "graph-break" and d.remedy is not None)
    rows = []
    for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        rule = get_code(code)
        rows.append({"code": code, "name": rule.name if rule else "", "count": count,
                     "fixable": safe[code] > 0, "unsafe_fixable": unsafe[code] > 0,
                     "removed_by_flags": flagged[code]})
    if fmt == "json":
        json.dump(rows, out, indent=1)
        out.write("\n")
        return
    width = max((len(str(r["count"])) for r in rows), default=1)
    for r in rows:
        mark = "[*] " if r["fixable"] else "[-] " if r["unsafe_fixable"] else ""
        out.write(f"{r['count']:>{width}}\t{r['code']}\t{mark}{r['name']}\n")
    out.write(flag_summary(diagnostics) + "\n")


def flag_summary(diagnostics: list[Diagnostic]) -> str:
    """How many graph breaks Dynamo's capture flags remove, by flag, and how many remain."""
    breaks = [d for d in diagnostics if d.kind == "graph-break"]
    by_flag = Counter(d.remedy for d in breaks if d.remedy is not None)
    removed = sum(by_flag.values())
    detail = ", ".join(f"{n} by {flag}" for flag, n in sorted(by_flag.items()))
    return (f"capture flags: {removed} of {len(breaks)} graph breaks removed" + (f" ({detail})" if detail else "")
            + f", {len(breaks) - removed} remain")


REPORTERS: dict[str, Reporter] = {"text": text, "json": json_array, "github": github, "sarif": sarif}
