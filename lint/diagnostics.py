"""The diagnostic record every interface (CLI, JSON, flake8, LSP) reports."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["graph-break", "recompile", "error"]


@dataclass(frozen=True)
class TextEdit:
    """Replace the text between two 1-based (line, column) positions (end exclusive)."""

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "column": self.column, "end_line": self.end_line,
                "end_column": self.end_column, "new_text": self.new_text}


@dataclass(frozen=True)
class Fix:
    safety: Literal["safe", "unsafe"]
    description: str
    edits: tuple[TextEdit, ...]
    fixer: str | None = None
    """The name of the fixer that made the edits."""

    def to_json(self) -> dict[str, Any]:
        return {"safety": self.safety, "description": self.description, "fixer": self.fixer,
                "edits": [e.to_json() for e in self.edits]}


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

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
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
            "fix": self.fix.to_json() if self.fix is not None else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Diagnostic":
        fix = data.get("fix")
        return cls(
            path=data["path"], line=data["line"], column=data["column"], end_line=data["end_line"],
            end_column=data["end_column"], code=data["code"], kind=data["kind"], message=data["message"],
            gb_type=data.get("gb_type"), gb_id=data.get("gb_id"), hint=data.get("hint"),
            fix=Fix(fix["safety"], fix["description"], tuple(TextEdit(**e) for e in fix["edits"]))
            if fix else None,
        )
