"""dynalint positions, diagnostics and rewrites in Language Server Protocol terms.

dynalint counts 1-based lines and columns in code points; LSP counts 0-based
lines and columns in the code units the client negotiated (UTF-16 unless it
asked otherwise), and breaks lines at ``\\n``, ``\\r\\n`` and ``\\r`` only.  The
unit arithmetic is pygls's position codec.
"""
from __future__ import annotations

import difflib
import re

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

from dynalint.diagnostics import Diagnostic
from dynalint.docs import rule_url
from dynalint.rules.base import get_rule

SOURCE = "dynalint"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

#: Graph breaks always happen where reported; a recompile hazard costs only if
#: the value really changes between calls, so it is shown one step quieter.
SEVERITY = {
    "graph-break": types.DiagnosticSeverity.Warning,
    "recompile": types.DiagnosticSeverity.Information,
    "error": types.DiagnosticSeverity.Error,
}


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """Lines as LSP counts them (a text ending with a line break has an empty last line)."""
    if not keepends:
        return _LINE_BREAK.split(text)
    out, start = [], 0
    for m in _LINE_BREAK.finditer(text):
        out.append(text[start:m.end()])
        start = m.end()
    if start < len(text):
        out.append(text[start:])
    return out


class PositionMap:
    """Converts 1-based code-point positions of one text to client positions."""

    def __init__(self, text: str, codec: PositionCodec | None = None) -> None:
        self.text = text
        self.lines = split_lines(text)
        self.codec = codec or PositionCodec()

    def position(self, line: int, column: int) -> types.Position:
        index = line - 1
        if index >= len(self.lines):
            return self.end()
        index = max(index, 0)
        character = min(max(column - 1, 0), len(self.lines[index]))
        return self.codec.position_to_client_units(self.lines, ServerTextPosition(index, character))

    def end(self) -> types.Position:
        last = len(self.lines) - 1
        end = ServerTextPosition(last, len(self.lines[last]))
        return self.codec.position_to_client_units(self.lines, end)

    def range(self, line: int, column: int, end_line: int, end_column: int) -> types.Range:
        return types.Range(start=self.position(line, column), end=self.position(end_line, end_column))


def lsp_diagnostic(d: Diagnostic, positions: PositionMap) -> types.Diagnostic:
    message = d.message + (f"\nHint: {d.hint}" if d.hint else "")
    has_rule = get_rule(d.code) is not None
    return types.Diagnostic(
        range=positions.range(d.line, d.column, d.end_line, d.end_column),
        message=message,
        severity=SEVERITY.get(d.kind, types.DiagnosticSeverity.Warning),
        code=d.code,
        code_description=types.CodeDescription(href=rule_url(d.code)) if has_rule else None,
        source=SOURCE,
        data={"kind": d.kind, "gb_id": d.gb_id} if d.gb_id else {"kind": d.kind},
    )


def text_edits(old: str, new: str, positions: PositionMap) -> list[types.TextEdit]:
    """Whole-line edits turning ``old`` into ``new`` (``positions`` must map ``old``)."""
    a, b = split_lines(old, keepends=True), split_lines(new, keepends=True)

    def at(index: int) -> types.Position:
        return types.Position(line=index, character=0) if index < len(a) else positions.end()

    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            span = types.Range(start=at(i1), end=at(i2))
            edits.append(types.TextEdit(range=span, new_text="".join(b[j1:j2])))
    return edits
