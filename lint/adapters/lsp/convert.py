"""dynalint positions, diagnostics and rewrites in Language Server Protocol terms.

dynalint counts 1-based lines and columns in code points; LSP counts 0-based
lines and columns in the code units the client negotiated (UTF-16 unless it
asked otherwise), and breaks lines at ``\\n``, ``\\r\\n`` and ``\\r`` only.  The
unit arithmetic is pygls's position codec.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

from dynalint.core.diagnostics import Diagnostic, TextEdit
from dynalint.core.text_lines import split_lines
from dynalint.adapters.rules_reference import rule_url
from dynalint.rules.base import get_code

SOURCE = "dynalint"

#: Graph breaks always happen where reported; a recompile hazard costs only if
#: the value really changes between calls, so it is shown one step quieter.
SEVERITY = {
    "graph-break": types.DiagnosticSeverity.Warning,
    "recompile": types.DiagnosticSeverity.Information,
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
}


_ENCODINGS = {types.PositionEncodingKind.Utf8: ("utf-8", 1),
              types.PositionEncodingKind.Utf16: ("utf-16-le", 2),
              types.PositionEncodingKind.Utf32: ("utf-32-le", 4)}


class FastPositionCodec(PositionCodec):
    """pygls's position codec, with the same answers, computed by the codecs of the standard library.

    pygls counts the code units of a line one character at a time in Python: on a generated file of
    megabytes on one line, each position of an edit or a diagnostic costs seconds of the thread that
    answers.  Here an ASCII line (the usual case) needs no conversion, and any other line is encoded
    once per position."""

    def __init__(self, encoding: types.PositionEncodingKind | str | None = types.PositionEncodingKind.Utf16
                 ) -> None:
        super().__init__(encoding)
        utf16 = _ENCODINGS[types.PositionEncodingKind.Utf16]
        self._codec = _ENCODINGS.get(encoding, utf16)  # type: ignore[arg-type]

    def client_num_units(self, string: str) -> int:
        if string.isascii():
            return len(string)
        name, width = self._codec
        try:
            return len(string.encode(name)) // width
        except UnicodeEncodeError:  # a lone surrogate: pygls counts it
            return super().client_num_units(string)

    def position_from_client_units(self, lines: Sequence[str], position: types.Position
                                   ) -> ServerTextPosition:
        if not lines:
            return ServerTextPosition(0, 0)
        if position.line >= len(lines):
            return ServerTextPosition(len(lines) - 1, self.client_num_units(lines[-1]))
        line = lines[position.line].replace("\r\n", "\n")
        total = self.client_num_units(line)
        if total == 0:
            return ServerTextPosition(position.line, 0)
        wanted = total - 1 if position.character > total else position.character  # as pygls
        if line.isascii() or self._codec[1] == 4:
            return ServerTextPosition(position.line, min(wanted, len(line)))
        name, width = self._codec
        try:
            head = line.encode(name)[:wanted * width].decode(name, "ignore")
        except UnicodeEncodeError:
            return super().position_from_client_units(lines, position)
        # the first character whose end reaches ``wanted`` (one cut in its middle counts whole)
        index = len(head) + (self.client_num_units(head) < wanted)
        return ServerTextPosition(position.line, min(index, len(line)))

    def position_to_client_units(self, lines: Sequence[str], position: ServerTextPosition | types.Position
                                 ) -> types.Position:
        try:
            line = lines[position.line]
        except IndexError:
            return types.Position(line=len(lines), character=0)
        return types.Position(line=position.line, character=self.client_num_units(line[:position.character]))


class PositionMap:
    """Converts 1-based code-point positions of one text to client positions."""

    def __init__(self, text: str, codec: PositionCodec | None = None) -> None:
        self.text = text
        self.lines = split_lines(text)
        self.codec = codec or FastPositionCodec()

    def position(self, line: int, column: int) -> types.Position:
        index = line - 1
        if index >= len(self.lines):
            return self.end()
        index = max(index, 0)
        character = min(max(column - 1, 0), len(self.lines[index]))
        return self.codec.position_to_client_units(self.lines, ServerTextPosition(index, character))

    def line(self, line: int) -> int:
        """The client line of any position on 1-based ``line`` (no column conversion: cheap)."""
        return min(max(line - 1, 0), len(self.lines) - 1)

    def end(self) -> types.Position:
        last = len(self.lines) - 1
        end = ServerTextPosition(last, len(self.lines[last]))
        return self.codec.position_to_client_units(self.lines, end)

    def range(self, line: int, column: int, end_line: int, end_column: int) -> types.Range:
        return types.Range(start=self.position(line, column), end=self.position(end_line, end_column))


def lsp_diagnostic(d: Diagnostic, positions: PositionMap) -> types.Diagnostic:
    message = d.message + (f"\nHint: {d.hint}" if d.hint else "")
    has_rule = get_code(d.code) is not None
    return types.Diagnostic(
        range=positions.range(d.line, d.column, d.end_line, d.end_column),
        message=message,
        severity=SEVERITY.get(d.kind, types.DiagnosticSeverity.Warning),
        code=d.code,
        code_description=types.CodeDescription(href=rule_url(d.code)) if has_rule else None,
        source=SOURCE,
        data={"kind": d.kind, "gb_id": d.gb_id} if d.gb_id else {"kind": d.kind},
    )


def lsp_edits(edits: Iterable[TextEdit], positions: PositionMap) -> list[types.TextEdit]:
    """dynalint text edits (positions in the text ``positions`` maps) as LSP edits."""
    return [types.TextEdit(range=positions.range(e.line, e.column, e.end_line, e.end_column), new_text=e.new_text)
            for e in edits]


def text_edits(old: str, new: str, positions: PositionMap) -> list[types.TextEdit]:
    """The LSP edits turning ``old`` into ``new`` (``positions`` must map ``old``): one diff, the same
    edits ``check --format json`` reports."""
    from dynalint.engine.fixing import text_edits as diff_edits

    return lsp_edits(diff_edits(old, new), positions)


__all__ = ["FastPositionCodec", "PositionMap", "lsp_diagnostic", "lsp_edits", "split_lines", "text_edits"]
