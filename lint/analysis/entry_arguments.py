"""The Python values callers in a module pass to its compiled entry points.

Dynamo specialises a compiled function on its Python arguments, so distinct literals passed to one
parameter from code that is not compiled itself (a call from compiled code is inlined) are distinct
graphs.  Read from the module index's call sites: a module-level function by its name, a module's
``forward`` through the local names its callers bind to ``ClassName(...)``, and what
``torch.compile(...)`` returned by the name it is bound to.  An int computed from the variable of the
loop that makes the calls changes from one call to the next.  A number the compiled code only passes
on (binds, packs into a container, returns) installs no guard (measured on torch 2.13).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import libcst as cst

from dynalint.analysis.syntax import literal_value, parent_map, walk

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import FunctionInfo, ModuleIndex
    from dynalint.analysis.program import Program


@dataclass(frozen=True)
class ParameterValues:
    """What callers pass to one parameter of a compiled entry point, where Dynamo guards on it."""

    function: "FunctionInfo"
    param: cst.Param
    values: frozenset[tuple[str, Any]]
    """``(type name, value)`` pairs of the literals passed: ``True`` and ``1`` stay apart."""
    in_loop: bool = False
    """An int computed from the variable of the loop that makes the calls is passed."""

    @property
    def varies(self) -> bool:
        return self.in_loop or len(self.values) >= 2


def entry_argument_values(program: "Program") -> Iterator[ParameterValues]:
    """Each parameter of each compiled entry point that callers pass different values and that the
    entry point reads where Dynamo specialises on it, in definition order."""
    idx = program.index
    compiled = {id(fn) for fn in program.entry_compiled}
    by_class: dict[str, list[tuple[cst.Call, "FunctionInfo"]]] | None = None
    handles = _compiled_handles(program)
    for fn in program.compiled:
        entry = fn.compile_decorated or (fn.name == "forward" and fn.cls is not None and fn.cls.is_module)
        through = [(name, scope) for name, scope, target in handles if target is fn]
        if not entry and not through:
            continue
        params = list(fn.node.params.params)
        if fn.is_method:
            params = params[1:]
        if fn.cls is None:
            calls = list(idx.call_sites.get(fn.name, ()))
        else:
            if by_class is None:
                by_class = _instance_calls(idx, compiled)
            calls = list(by_class.get(fn.cls.name, ()))
        # calls of what `torch.compile(...)` returned, where that name is bound
        calls += [(call, caller) for name, scope in through for call, caller in idx.call_sites.get(name, ())
                  if isinstance(call.func, cst.Name) and (scope is None or caller is scope)]
        values: dict[str, set[tuple[str, Any]]] = {}
        in_loop: set[str] = set()
        for call, caller in calls:
            if caller is not None and id(caller) in compiled:
                continue  # inlined into the caller's graph: no recompile
            for name, const in _literal_arguments(call, params):
                values.setdefault(name, set()).add((type(const).__name__, const))
            if caller is not None:
                in_loop.update(_loop_varying_arguments(call, caller, params))
        for prm in params:
            found = ParameterValues(fn, prm, frozenset(values.get(prm.name.value, ())), prm.name.value in in_loop)
            if not found.varies:
                continue
            numbers = {t for t, _ in found.values} <= {"int", "float"}
            if numbers and not _specialising_read(program, fn, prm.name.value):
                continue  # a number only passed through (or not read) installs no guard
            yield found


def _instance_calls(idx: "ModuleIndex", compiled: set[int]) -> dict[str, list[tuple[cst.Call, "FunctionInfo"]]]:
    """Class name -> the calls ``obj(...)`` of a local ``obj = ClassName(...)`` in functions that are not
    compiled, in the order of the module's call sites."""
    instances = _instances_by_caller(idx, compiled)
    out: dict[str, list[tuple[cst.Call, FunctionInfo]]] = {}
    for sites in idx.call_sites.values():
        for call, caller in sites:
            if caller is not None and isinstance(call.func, cst.Name):
                cls = instances.get(id(caller), {}).get(call.func.value)
                if cls is not None:
                    out.setdefault(cls, []).append((call, caller))
    return out


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
            return literal_value(node)
        except Exception:
            return _NOT_LITERAL
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, (cst.Integer, cst.Float)):
        return -literal_value(node.expression)  # type: ignore[operator]
    return _NOT_LITERAL


def _compiled_handles(program: "Program") -> list[tuple[str, "FunctionInfo | None", "FunctionInfo"]]:
    """``(name, scope, entry)`` for ``name = torch.compile(target)``: calls of ``name`` in ``scope`` (a
    function, or None for the module) run ``entry`` compiled."""
    idx = program.index
    out = []
    for call, where in idx.compile_targets:
        target = program.compile_target(call, where)
        if target is None or target[0].owner is not idx:
            continue
        for n in walk(where.node.body if where is not None else idx.module, into_scopes=False):
            if isinstance(n, cst.Assign) and n.value is call and len(n.targets) == 1 \
                    and isinstance(n.targets[0].target, cst.Name):
                out.append((n.targets[0].target.value, where, target[0]))
    return out


def _loop_varying_arguments(call: cst.Call, caller: "FunctionInfo", params: list[cst.Param]) -> Iterator[str]:
    """Parameters to which ``call`` passes an int computed from the variable of an enclosing
    ``for v in range(N)`` loop (N >= 2) of the caller: the value changes between iterations."""
    loop_vars: set[str] = set()
    for n in walk(caller.node.body, into_scopes=False):
        if isinstance(n, cst.For) and isinstance(n.target, cst.Name) and _counts_to_two(n.iter) \
                and any(m is call for m in walk(n.body, into_scopes=False)):
            loop_vars.add(n.target.value)
    if not loop_vars:
        return
    names = [p.name.value for p in params]
    for position, arg in enumerate(call.args):
        if arg.star or arg.keyword is not None:
            if arg.keyword is not None and arg.keyword.value in names and _int_of(arg.value, loop_vars):
                yield arg.keyword.value
            continue
        if position < len(names) and _int_of(arg.value, loop_vars):
            yield names[position]


def _counts_to_two(it: cst.BaseExpression) -> bool:
    """``range(N)`` / ``range(a, b)`` with literals, at least two iterations."""
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"):
        return False
    bounds = [_literal(a.value) for a in it.args]
    if not bounds or any(not isinstance(b, int) or isinstance(b, bool) for b in bounds) or len(bounds) > 2:
        return False
    lo, hi = (0, bounds[0]) if len(bounds) == 1 else bounds
    return hi - lo >= 2


def _int_of(node: cst.BaseExpression, loop_vars: set[str]) -> bool:
    """An int expression of a loop variable and int literals (``n``, ``n + 1``, ``2 * n``)."""
    if isinstance(node, cst.Name):
        return node.value in loop_vars
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply)):
        sides = (node.left, node.right)
        return any(_int_of(x, loop_vars) for x in sides) and all(
            _int_of(x, loop_vars) or isinstance(_literal(x), int) for x in sides)
    return False


def _specialising_read(program: "Program", fn: "FunctionInfo", name: str, depth: int = 0) -> bool:
    """Whether ``fn`` reads its number parameter ``name`` where Dynamo specialises on it (arithmetic, a
    test, a size, a call): a number that is only bound to other names, packed into a tuple, list or
    dict, or returned installs no guard (measured on torch 2.13). Anything not understood is a read."""
    return _carriers(program, fn, name, depth) is None


def _carriers(program: "Program", fn: "FunctionInfo", name: str, depth: int) -> set[str] | None:
    """The names of ``fn`` that hold its parameter ``name`` (bound or packed, never read); None when
    the function reads it."""
    parents = parent_map(fn.node)
    tracked = {name}
    pending = [name]
    while pending:
        current = pending.pop()
        for n in walk(fn.node.body, into_scopes=False):
            if not (isinstance(n, cst.Name) and n.value == current):
                continue
            parent = parents.get(id(n))
            if isinstance(parent, cst.Attribute) and parent.attr is n:
                continue
            node = n
            new: list[str] | None = None
            while True:
                parent = parents.get(id(node))
                if isinstance(parent, (cst.Element, cst.DictElement)) and parent.value is node:
                    node = parents.get(id(parent))  # packed: the container carries it
                    if not isinstance(node, (cst.Tuple, cst.List, cst.Dict)):
                        return None
                    continue
                if isinstance(parent, cst.AssignTarget):
                    break  # stored to
                if isinstance(parent, (cst.Subscript, cst.Attribute)) and parent.value is node:
                    node = parent  # read back from its container: followed as the value itself
                    continue
                call = parents.get(id(parent)) if isinstance(parent, cst.Arg) else None
                if isinstance(call, cst.Call):
                    new = _through_call(program, call, parent, depth)
                    if new is None:
                        return None
                    node = call
                    parent = parents.get(id(call))
                break
            if isinstance(parent, (cst.AssignTarget, cst.Return)):
                continue
            if not (isinstance(parent, cst.Assign) and parent.value is node):
                return None
            targets = [t.target for t in parent.targets]
            if new is not None:  # a call's result: only the tuple elements that carry the value
                if len(targets) != 1 or not isinstance(targets[0], (cst.Tuple, cst.List)):
                    return None if new else tracked
                parts = [e.value for i, e in enumerate(targets[0].elements) if i in new]
            else:
                parts = [part for t in targets for part in (
                    [e.value for e in t.elements] if isinstance(t, (cst.Tuple, cst.List)) else [t])]
            if not all(isinstance(part, cst.Name) for part in parts):
                return None
            for part in parts:
                if part.value not in tracked:
                    tracked.add(part.value)
                    pending.append(part.value)
    return tracked


def _through_call(program: "Program", call: cst.Call, arg: cst.Arg, depth: int) -> set[int] | None:
    """``arg`` handed to a function of this module that does not read it: the positions of the
    returned tuple that carry it on (empty: not returned); None when the function reads it or is
    not known."""
    callee = program.index.functions.get(call.func.value) if isinstance(call.func, cst.Name) else None
    position = next((i for i, a in enumerate(call.args) if a is arg), -1)
    names = callee.param_names() if callee is not None else []
    if callee is None or depth >= 3 or arg.star or arg.keyword is not None or position >= len(names):
        return None
    held = _carriers(program, callee, names[position], depth + 1)
    if held is None:
        return None
    positions: set[int] = set()
    for n in walk(callee.node.body, into_scopes=False):
        if isinstance(n, cst.Return) and n.value is not None:
            if isinstance(n.value, cst.Tuple):
                positions |= {i for i, e in enumerate(n.value.elements)
                              if isinstance(e.value, cst.Name) and e.value.value in held}
            elif isinstance(n.value, cst.Name) and n.value.value in held:
                return None  # returned as it is: followed no further
    return positions
