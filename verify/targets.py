"""``FILE::NAME`` references to the code to verify and to its input factories.

Parsed and checked before any user code runs, so a typo is a usage error (exit
status 2) with a one-line message, not a traceback from a worker.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass

#: The module-level function a target's file may define to provide its input sets.
INPUTS_CONVENTION = "dynalint_inputs"
#: The optional module-level hook called before every call of the stream.
BEFORE_CALL_CONVENTION = "dynalint_before_call"


class TargetError(ValueError):
    """A reference that cannot name anything (bad syntax, missing file or name)."""


@dataclass(frozen=True)
class Ref:
    """``path::name``: a top-level name defined in a Python file."""

    path: str
    name: str

    def __str__(self) -> str:
        return f"{self.path}::{self.name}"

    @property
    def realpath(self) -> str:
        return os.path.realpath(self.path)


def parse_ref(text: str, *, what: str = "target") -> Ref:
    """``"model.py::Net"`` -> Ref; raises TargetError with a readable message."""
    path, sep, name = text.rpartition("::")
    if not sep or not path or not name:
        raise TargetError(f"{what} {text!r} is not FILE::NAME (e.g. model.py::Net)")
    if not name.isidentifier():
        raise TargetError(f"{what} {text!r}: {name!r} is not a Python name")
    if not os.path.isfile(path):
        raise TargetError(f"{what} {text!r}: no such file {path!r}")
    return Ref(path, name)


def top_level_names(source: str) -> set[str] | None:
    """Names bound at module level (None when the file does not parse: the worker will say why)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            return None  # conditional definitions: leave the decision to the import
    return names


def check_defined(ref: Ref, source: str, *, what: str = "target") -> None:
    """Raise TargetError when ``ref.name`` is evidently not defined in its file."""
    names = top_level_names(source)
    if names is not None and ref.name not in names and "*" not in names:
        raise TargetError(f"{what} {ref}: {ref.name!r} is not defined at the top level of {ref.path}")


def same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)
