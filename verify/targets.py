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
    """Names the module may bind when imported: at its top level, in every branch of a top-level
    ``if``/``try``/``with``/loop (the body of ``if __name__ == "__main__":`` does not run on import),
    and the ``global`` names of its functions.  None when the file does not parse (the worker will
    say why) or when it can bind names no statement shows (``globals()``, ``exec``, a module
    ``__getattr__``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            names.update(node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _DYNAMIC:
            return None
    if not _bind(tree.body, names):
        return None
    return names


#: Calls through which a module can bind names that no statement shows.
_DYNAMIC = frozenset({"globals", "exec", "vars", "locals", "setattr", "__import__"})


def _bind(body: list[ast.stmt], names: set[str]) -> bool:
    """Add the names ``body`` may bind at module level; False when a statement hides what it binds."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == "__getattr__":
                return False
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With,
                               ast.AsyncWith)):
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [i.optional_vars for i in node.items if i.optional_vars is not None]
                       if isinstance(node, (ast.With, ast.AsyncWith)) else [node.target])
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Expr):
            pass
        elif not isinstance(node, (ast.If, ast.Try, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith,
                                   ast.Pass, ast.Delete, ast.Assert, ast.Raise, ast.Global, ast.Nonlocal)) \
                and not type(node).__name__ == "TryStar":
            return False  # match statements and what later Pythons add: not modelled
        names.update(n.target.id for n in ast.walk(node)
                     if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.If) and _is_main_guard(node.test):
            if not _bind(node.orelse, names):
                return False
            continue
        for part in ("body", "orelse", "finalbody"):
            if not _bind(getattr(node, part, []), names):
                return False
        for handler in getattr(node, "handlers", []):
            if handler.name:
                names.add(handler.name)
            if not _bind(handler.body, names):
                return False
    return True


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides)
            and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides))


def check_defined(ref: Ref, source: str, *, what: str = "target") -> None:
    """Raise TargetError when ``ref.name`` is evidently not defined in its file."""
    names = top_level_names(source)
    if names is not None and ref.name not in names and "*" not in names:
        raise TargetError(f"{what} {ref}: {ref.name!r} is not defined at the top level of {ref.path}")


def same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)
