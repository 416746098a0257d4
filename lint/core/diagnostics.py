"""The diagnostic record every interface (CLI, JSON, flake8, LSP) reports."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["graph-break", "recompile", "error", "warning"]


@dataclass(frozen=True)
class TextEdit:
    """Replace the text between two 1-based (line, column) positions (end exclusive)."""

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str

    def to_json(self) -> dict[str, Any]:
        """ruff's shape: ``content`` replaces ``location`` up to ``end_location`` (rows and columns 1-based)."""
        return {"content": self.new_text, "location": {"row": self.line, "column": self.column},
                "end_location": {"row": self.end_line, "column": self.end_column}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TextEdit":
        return cls(data["location"]["row"], data["location"]["column"], data["end_location"]["row"],
                   data["end_location"]["column"], data["content"])


@dataclass(frozen=True)
class Fix:
    safety: Literal["safe", "unsafe"]
    """``safe``: applied by ``dynalint fix``; ``unsafe``: only with ``--unsafe-fixes`` (ruff's applicability)."""
    description: str
    edits: tuple[TextEdit, ...]
    fixer: str | None = None
    """The name of the fixer that made the edits."""

    def to_json(self) -> dict[str, Any]:
        return {"applicability": self.safety, "message": self.description, "fixer": self.fixer,
                "edits": [e.to_json() for e in self.edits]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Fix":
        return cls(data["applicability"], data["message"], tuple(TextEdit.from_json(e) for e in data["edits"]),
                   data.get("fixer"))


@dataclass(frozen=True)
class Diagnostic:
    """One finding at a source range. Lines and columns are 1-based; the end is exclusive."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    kind: Kind
    message: str
    gb_type: str | None = None
    gb_id: str | None = None
    hint: str | None = None
    fix: Fix | None = field(default=None, compare=False)
    cell: int | None = None
    """In a notebook: the cell (1-based, among all cells) whose lines ``line`` and ``end_line`` count."""
    remedy: str | None = None
    """The ``torch._dynamo.config`` flag under which Dynamo no longer breaks here (a configuration
    remedy; the hint says so too), or None."""

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    def to_json(self) -> dict[str, Any]:
        cell = {"cell": self.cell} if self.cell is not None else {}
        return {
            "path": self.path,
            **cell,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "kind": self.kind,
            "message": self.message,
            "gb_type": self.gb_type,
            "gb_id": self.gb_id,
            "hint": self.hint,
            "remedy": self.remedy,
            "fix": self.fix.to_json() if self.fix is not None else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Diagnostic":
        fix = data.get("fix")
        return cls(
            path=data["path"], line=data["line"], column=data["column"], end_line=data["end_line"],
            end_column=data["end_column"], code=data["code"], kind=data["kind"], message=data["message"],
            gb_type=data.get("gb_type"), gb_id=data.get("gb_id"), hint=data.get("hint"),
            fix=Fix.from_json(fix) if fix else None, cell=data.get("cell"), remedy=data.get("remedy"),
        )


@dataclass
class FileResult:
    """What checking one file gave: its diagnostics, or why it could not be checked."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: str | None = None
    """A one-line message when the file could not be read or analysed."""
    source: str | None = field(default=None, repr=False)
