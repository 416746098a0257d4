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
from dynalint.analysis.entry_arguments import entry_call_sites
from dynalint.analysis.module_index import body_bindings, defining_scope, names_bound_by
from dynalint.analysis.syntax import NOT_LITERAL, encloses, literal_constant, walk

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import FunctionInfo
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
    """A statement of ``parent`` that rebinds it between two calls of ``function``."""


def rebound_cells(program: "Program") -> Iterator[ReboundCell]:
    """Each cell a function the module defines inside another and compiles reads, which that other function
    binds to constants (numbers, strings, flags: values Dynamo guards on) and binds again between two calls
    of the compiled function (one call before and one after it, or both in one loop)."""
    nested = {id(fn) for fn in program.compiled
              if fn.closure is not None and fn.outer is not None and fn.cls is None}
    if not nested:
        return
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
