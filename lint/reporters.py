"""Output formats for ``dynalint check``."""
from __future__ import annotations

import json
from typing import Callable, TextIO

from dynalint.diagnostics import Diagnostic

Reporter = Callable[[list[Diagnostic], TextIO], None]


def text(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """``path:line:col: CODE message`` (flake8 style)."""
    for d in diagnostics:
        out.write(f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}\n")


def json_array(diagnostics: list[Diagnostic], out: TextIO) -> None:
    json.dump([d.to_json() for d in diagnostics], out, indent=1)
    out.write("\n")


#: As in SARIF and the language server: recompile hazards cost only when the value changes.
GITHUB_LEVELS = {"graph-break": "warning", "recompile": "notice", "error": "error"}


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
    from dynalint.sarif import sarif_log  # loads every rule and fixer: only when asked for

    json.dump(sarif_log(diagnostics), out, indent=1)
    out.write("\n")


REPORTERS: dict[str, Reporter] = {"text": text, "json": json_array, "github": github, "sarif": sarif}
