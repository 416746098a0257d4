"""Variables of a function that a function it defines and compiles reads (its closure cells), rebound between
two calls of the compiled function: Dynamo guards a cell's value as it guards a global's (measured on torch
2.13: ``scale = 1.0``, ``fn(x)``, ``scale = 3.0``, ``fn(x)`` recompiles on ``scale == 1.0``); and so is an
attribute of an object such a cell holds, set between two calls (``opts.temperature = 0.5``: recompiles on
``opts.temperature == 1.0``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from dynalint.analysis.class_state import initial_constant
from dynalint.analysis.compiled_instances import passed_constants
from dynalint.analysis.entry_arguments import entry_call_sites, repeated_handle_calls
from dynalint.analysis.module_index import (body_bindings, calls_by_name, defining_scope, names_bound_by,
                                            top_level_code)
from dynalint.analysis.syntax import NOT_LITERAL, encloses, literal_constant, parent_map, walk

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import FunctionInfo, ModuleIndex
    from dynalint.analysis.program import Program


@dataclass(frozen=True)
class ReboundCell:
    function: "FunctionInfo"
    """The compiled function that reads the cell."""
    read: cst.Name | cst.Attribute
    """Its first read of the cell (or of the attribute of the object the cell holds)."""
    parent: cst.FunctionDef
    """The function whose variable the cell is."""
    rebinding: cst.CSTNode
    """A statement of ``parent`` that rebinds it between two calls of ``function``; one of ``function``
    itself that changes it at each call (``how`` "counted"); or a call of ``parent`` that gives it another
    value than an earlier call (``how`` "made")."""
    how: str = "rebound"


def rebound_cells(program: "Program") -> Iterator[ReboundCell]:
    """Each cell a function the module defines inside another and compiles reads, which that other function
    binds to constants (numbers, strings, flags: values Dynamo guards on) and binds again between two calls
    of the compiled function (one call before and one after it, or both in one loop); and the cells of
    :func:`_counted_cells` and :func:`_made_cells`."""
    nested = {id(fn) for fn in program.compiled
              if fn.closure is not None and fn.outer is not None and fn.cls is None}
    if not nested:
        return
    yield from _made_cells(program, [fn for fn in program.compiled if id(fn) in nested])
    for fn, sites, _ in entry_call_sites(program):
        if id(fn) not in nested:
            continue
        parent = defining_scope(fn.outer.node, fn.node)
        if parent is None:
            continue
        order: dict[int, int] = {}
        bindings: dict[str, list[cst.CSTNode]] = {}
        attribute_stores: dict[str, list[cst.Assign]] = {}  # (`opts.temperature = 0.5`, by its target's text)
        loops: list[cst.CSTNode] = []
        for i, n in enumerate(walk(parent.body, into_scopes=False)):
            order[id(n)] = i
            if type(n) in (cst.For, cst.While):
                loops.append(n)
            for name in names_bound_by(n):
                bindings.setdefault(name, []).append(n)
            t = n.targets[0].target if type(n) is cst.Assign and len(n.targets) == 1 else None
            if type(t) is cst.Attribute and type(t.value) is cst.Name \
                    and _constant(n.value) is not NOT_LITERAL:
                attribute_stores.setdefault(f"{t.value.value}.{t.attr.value}", []).append(n)
        calls = [call for call, _, owner in sites if owner is program and id(call) in order]
        if len(calls) >= 2 or any(encloses(loop.body, c) for loop in loops for c in calls) \
                or repeated_handle_calls(program, fn):
            yield from _counted_cells(fn, parent)
        if len(calls) < 2:
            continue
        own = body_bindings(fn.node) | set(fn.param_names())
        reported: set[str] = set()
        nodes = list(walk(fn.node.body))
        # (the names of attributes and keywords name no variable)
        not_variables = {id(n.attr) for n in nodes if type(n) is cst.Attribute} \
            | {id(n.keyword) for n in nodes if type(n) is cst.Arg and n.keyword is not None}
        for n in nodes:
            if type(n) is not cst.Name or id(n) in not_variables or n.value in own or n.value in reported \
                    or n.value not in bindings:
                continue
            stores = bindings[n.value]
            constants = [_constant_stored(s) for s in stores]
            if len(stores) < 2 or NOT_LITERAL in constants or (
                    len(set(map(repr, constants))) < 2 and not any(type(s) is cst.AugAssign for s in stores)):
                continue
            rebinding = next((s for s in stores[1:] if _between_calls(s, calls, order, loops)), None)
            if rebinding is not None:
                reported.add(n.value)
                yield ReboundCell(fn, n, parent, rebinding)
        # `opts.temperature` of an object the defining function built once (the cell stays, its attribute
        # changes)
        objects = set(fn.closure or ()) - own
        for n in nodes:
            if type(n) is not cst.Attribute or type(n.value) is not cst.Name or n.value.value not in objects:
                continue
            path = f"{n.value.value}.{n.attr.value}"
            if path in reported:
                continue
            stores = [s for s in attribute_stores.get(path, ()) if _between_calls(s, calls, order, loops)]
            held = (fn.closure or {}).get(n.value.value)
            initial = initial_constant(held.cls, n.attr.value) if held is not None and held.cls is not None \
                else NOT_LITERAL
            if initial is not NOT_LITERAL and all(literal_constant(s.value) == initial for s in stores):
                continue  # (set to the value `__init__` gave it: nothing changes)
            if stores:
                reported.add(path)
                yield ReboundCell(fn, n, parent, stores[0])


def _made_cells(program: "Program", nested: list["FunctionInfo"]) -> Iterator[ReboundCell]:
    """The parameters of a module-level function (``def make(k)``) that a function it defines reads, where the
    closures its calls make are compiled one by one and run (``make(2)(x)``, ``make(3)(x)``, with ``return
    torch.compile(f)``, ``@torch.compile`` on ``f``, or ``torch.compile(make(2))``) and two calls pass it
    different constants: the compiled closures share one cache, that of ``f``'s code, guarded on the cell's
    value (measured on torch 2.13: the second closure recompiles on ``k == 2``)."""
    idx = program.index
    for fn in nested:
        outer = fn.outer
        if outer is None or outer.outer is not None or outer.cls is not None or fn.node not in \
                [n for n in walk(outer.node.body, into_scopes=False) if type(n) is cst.FunctionDef]:
            continue
        params = outer.param_names()
        shadowed = body_bindings(outer.node) | body_bindings(fn.node) | set(fn.param_names())
        free = [n for n in walk(fn.node.body) if type(n) is cst.Name and n.value in params and n.value not in shadowed]
        kept = _compiled_per_call(program, fn, outer)
        if not free or kept is None:
            continue
        reported: set[str] = set()
        for read in free:
            if read.value in reported:
                continue
            position = params.index(read.value)
            given: list[tuple[object, cst.Call]] = []
            for call, caller in calls_by_name(idx, outer):
                if _runs_made(call, caller, idx, kept):
                    scope = caller if caller is not None else top_level_code(idx)
                    given += [(v, call) for v in passed_constants(call, scope, position, read.value)]
            values = list(dict.fromkeys(v for v, _ in given))
            if len(values) >= 2 and len({type(v) for v in values}) == 1:
                reported.add(read.value)
                later = next(call for v, call in given if v != given[0][0])
                yield ReboundCell(fn, read, outer.node, later, "made")


def _compiled_per_call(program: "Program", fn: "FunctionInfo", outer: "FunctionInfo") -> str | None:
    """How a call of ``outer`` makes a compiled closure of ``fn`` and runs it: "inside" where ``outer`` calls
    it itself (``fn`` compiled as a decorator), "returned" where ``outer`` returns it compiled (``return
    torch.compile(fn)``, or ``return fn`` of a decorated ``fn``), "compiled outside" where it returns ``fn``
    as it is (for ``torch.compile(make(2))``); None otherwise."""
    idx = program.index
    if fn.compile_decorated and any(caller is outer for _, caller in calls_by_name(idx, fn)):
        return "inside"
    returns = [n.value for n in walk(outer.node.body, into_scopes=False) if type(n) is cst.Return]
    if len(returns) != 1 or returns[0] is None:
        return None
    value = returns[0]
    if type(value) is cst.Name and value.value == fn.name:
        return "returned" if fn.compile_decorated else "compiled outside"
    compiled = next((program.entry_points.compile_target(call, where) for call, where in idx.compile_targets
                     if call is value and where is outer), None)
    return "returned" if compiled is not None and compiled[0] is fn else None


def _runs_made(call: cst.Call, caller: "FunctionInfo | None", idx: "ModuleIndex", kept: str) -> bool:
    """The compiled closure ``call`` of the making function gives is run: ``make(2)(x)``, or a name bound to
    it (or, for ``kept`` "compiled outside", to ``torch.compile(make(2))``) called in the same scope."""
    if kept == "inside":
        return True
    parents = parent_map(caller.node if caller is not None else idx.module)
    held: cst.CSTNode = call
    up = parents.get(id(call))
    if kept == "compiled outside":
        if not (type(up) is cst.Arg and type(parents.get(id(up))) is cst.Call
                and any(parents.get(id(up)) is c for c, _ in idx.compile_targets)):
            return False
        held = parents.get(id(up))  # type: ignore[assignment]
        up = parents.get(id(held))
    if type(up) is cst.Call and up.func is held:
        return True
    if type(up) is cst.Assign and len(up.targets) == 1 and type(up.targets[0].target) is cst.Name:
        name = up.targets[0].target.value
        return any(type(c.func) is cst.Name and other is caller for c, other in idx.call_sites.get(name, ()))
    return False


def _counted_cells(fn: "FunctionInfo", parent: cst.FunctionDef) -> Iterator[ReboundCell]:
    """The cells ``fn``, run more than once as one object, changes itself by a number written out
    (``nonlocal calls``, ``calls += 1``): each call finds another value in the cell than the one the last
    graph was guarded on (measured on torch 2.13: ``calls == 0`` fails at the second call, once, and the
    number is then dynamic)."""
    declared = {name.name.value for n in walk(fn.node.body, into_scopes=False) if type(n) is cst.Nonlocal
                for name in n.names}
    seen: set[str] = set()
    listed = {id(name.name) for n in walk(fn.node.body, into_scopes=False) if type(n) is cst.Nonlocal
              for name in n.names}
    for n in walk(fn.node.body, into_scopes=False):
        if type(n) is cst.AugAssign and type(n.target) is cst.Name and n.target.value in declared \
                and n.target.value not in seen and type(step := _constant(n.value)) in (int, float) and step != 0:
            seen.add(n.target.value)
            first = next(m for m in walk(fn.node.body, into_scopes=False)
                         if type(m) is cst.Name and m.value == n.target.value and id(m) not in listed)
            yield ReboundCell(fn, first, parent, n, "counted")


def _constant_stored(node: cst.CSTNode) -> object:
    """The number, string or flag written out that ``node`` binds a name alone to (``scale = 3.0``,
    ``n += 1``); :data:`NOT_LITERAL` for any other binding."""
    if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
        value = node.value
    elif type(node) in (cst.AnnAssign, cst.AugAssign) and type(node.target) is cst.Name \
            and node.value is not None:
        value = node.value
    else:
        return NOT_LITERAL
    return _constant(value)


def _constant(value: cst.BaseExpression) -> object:
    """The number, string or flag ``value`` writes out; :data:`NOT_LITERAL` for anything else."""
    const = literal_constant(value)
    return const if isinstance(const, (bool, int, float, str)) else NOT_LITERAL


def _between_calls(store: cst.CSTNode, calls: list[cst.Call], order: dict[int, int], loops: list[cst.CSTNode]
                   ) -> bool:
    at = order[id(store)]
    if any(order[id(c)] < at for c in calls) and any(order[id(c)] > at for c in calls):
        return True
    return any(encloses(loop.body, store) and any(encloses(loop.body, c) for c in calls) for loop in loops)
