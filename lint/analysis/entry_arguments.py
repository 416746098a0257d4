"""The Python values callers in a module pass to its compiled entry points.

Dynamo specialises a compiled function on its Python arguments, so distinct literals passed to one
parameter from code that is not compiled itself (a call from compiled code is inlined) are distinct
graphs.  Read from the module index's call sites: a module-level function by its name, a module's
``forward`` through the local names its callers bind to ``ClassName(...)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import libcst as cst

from dynalint.analysis.syntax import walk

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import FunctionInfo, ModuleIndex
    from dynalint.analysis.program import Program


@dataclass(frozen=True)
class ParameterValues:
    """The distinct literals callers pass to one parameter of a compiled entry point."""

    function: "FunctionInfo"
    param: cst.Param
    values: frozenset[tuple[str, Any]]
    """``(type name, value)`` pairs: ``True`` and ``1`` stay apart."""


def entry_argument_values(program: "Program") -> Iterator[ParameterValues]:
    """Each parameter of each compiled entry point with the literals passed to it, in definition order."""
    idx = program.index
    compiled = {id(fn) for fn in program.compiled}
    instances: dict[int, dict[str, str]] | None = None
    for fn in program.compiled:
        entry = fn.compile_decorated or (fn.name == "forward" and fn.cls is not None and fn.cls.is_module)
        if not entry:
            continue
        params = list(fn.node.params.params)
        if fn.is_method:
            params = params[1:]
        if fn.cls is None:
            calls = idx.call_sites.get(fn.name, ())
        else:
            if instances is None:
                instances = _instances_by_caller(idx, compiled)
            calls = [(call, caller) for sites in idx.call_sites.values() for call, caller in sites
                     if caller is not None and isinstance(call.func, cst.Name)
                     and instances.get(id(caller), {}).get(call.func.value) == fn.cls.name]
        values: dict[str, set[tuple[str, Any]]] = {}
        for call, caller in calls:
            if caller is not None and id(caller) in compiled:
                continue  # inlined into the caller's graph: no recompile
            for name, const in _literal_arguments(call, params):
                values.setdefault(name, set()).add((type(const).__name__, const))
        for prm in params:
            yield ParameterValues(fn, prm, frozenset(values.get(prm.name.value, ())))


def _instances_by_caller(idx: "ModuleIndex", compiled: set[int]) -> dict[int, dict[str, str]]:
    """For each function that is not compiled: local names bound to ``ClassName(...)`` of this file."""
    out: dict[int, dict[str, str]] = {}
    for fn in idx.all_functions:
        if id(fn) in compiled:
            continue
        bound: dict[str, str] = {}
        for n in walk(fn.node.body):
            if isinstance(n, cst.Assign) and isinstance(n.value, cst.Call) and isinstance(n.value.func, cst.Name) \
                    and n.value.func.value in idx.classes:
                for t in n.targets:
                    if isinstance(t.target, cst.Name):
                        bound[t.target.value] = n.value.func.value
        if bound:
            out[id(fn)] = bound
    return out


def _literal_arguments(call: cst.Call, params: list[cst.Param]) -> Iterator[tuple[str, Any]]:
    names = [p.name.value for p in params]
    position = 0
    for arg in call.args:
        if arg.star:
            return
        const = _literal(arg.value)
        if arg.keyword is not None:
            if const is not _NOT_LITERAL and arg.keyword.value in names:
                yield arg.keyword.value, const
            continue
        if position < len(names) and const is not _NOT_LITERAL:
            yield names[position], const
        position += 1


_NOT_LITERAL = object()


def _literal(node: cst.BaseExpression) -> Any:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        try:
            return node.evaluated_value
        except Exception:
            return _NOT_LITERAL
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, (cst.Integer, cst.Float)):
        return -node.expression.evaluated_value
    return _NOT_LITERAL
