"""Instances of one class compiled one by one (``torch.compile(Scaled(1.0))``, then
``torch.compile(Scaled(3.0))``; ``torch.compile(integ.step)`` for each ``integ`` a loop builds) share the
compiled code of the method they run: Dynamo keeps one cache per code object, and guards it on the Python
attributes the method reads. Instances built with other values of an attribute the method reads then recompile
it (measured on torch 2.13: a float once, after which it is dynamic; an int of an ``nn.Module`` for each new
value; a bool once for each value)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import libcst as cst

from dynalint.analysis.loop_arguments import UNKNOWN, loop_argument_values
from dynalint.analysis.module_index import names_bound_by, top_level_code
from dynalint.analysis.syntax import NOT_LITERAL, literal_constant, position_bound, walk

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import ClassInfo, FunctionInfo
    from dynalint.analysis.program import Program

_SCALARS = (bool, int, float, str)


@dataclass(frozen=True)
class InstancesApart:
    method: "FunctionInfo"
    """The method the instances run compiled (``forward`` of a module compiled whole)."""
    cls: "ClassInfo"
    attribute: str
    read: cst.Attribute
    """The method's first read of ``self.<attribute>``."""
    values: tuple[Any, ...]
    """The values the instances hold, in the order they are built (two at least, distinct)."""
    built: cst.Call
    """A construction that gives one of them."""


def instances_apart(program: "Program") -> Iterator[InstancesApart]:
    """Each attribute that instances of one class, each compiled on its own, hold with different values
    (constants their constructions pass to a parameter ``__init__`` stores there) and that the compiled method
    reads."""
    idx = program.index
    found: dict[tuple[int, str], list[tuple[Any, cst.Call]]] = {}
    methods: dict[int, tuple["FunctionInfo", "ClassInfo"]] = {}
    for call, where in idx.compile_targets:
        if not call.args or call.args[0].keyword is not None:
            continue
        arg = call.args[0].value
        holder = arg.value if type(arg) is cst.Attribute else arg
        if type(holder) not in (cst.Name, cst.Call):
            continue
        target = program.entry_points.target_of(arg, where)
        if target is None or target[0].cls is None or target[0].is_static:
            continue
        method, cls = target[0], target[1] or target[0].cls
        # (`torch.compile(Scaled(1.0))` builds it where it compiles it)
        built = holder if type(holder) is cst.Call else _construction(holder.value, where, idx)
        made = program.names.static_value_of(built.func) if built is not None else None
        if built is None or made is None or made.cls is not cls:
            continue
        stores = _stored_parameters(cls)
        if not stores:
            continue
        methods[id(method)] = (method, cls)
        caller = where if where is not None else top_level_code(idx)
        for attribute, (position, name) in stores.items():
            for value in passed_constants(built, caller, position, name):
                found.setdefault((id(method), attribute), []).append((value, built))
    for (key, attribute), given in found.items():
        method, cls = methods[key]
        values = tuple(dict.fromkeys(v for v, _ in given))
        if len(values) < 2 or len({type(v) for v in values}) > 1:
            continue
        me = method.param_names()[0]
        reads = (n for n in walk(method.node.body) if type(n) is cst.Attribute and n.attr.value == attribute)
        read = next((n for n in reads if type(n.value) is cst.Name and n.value.value == me), None)
        if read is not None:
            yield InstancesApart(method, cls, attribute, read, values, given[0][1])


def _construction(name: str, where: "FunctionInfo | None", idx: Any) -> cst.Call | None:
    """The call that builds the instance ``name`` holds in the scope of ``where`` (the module's statements for
    None): its one binding there, to a call (``integ = Integrator(0.01, thermostat=t)``, also as an item of a
    tuple unpacked, ``a, b = Scaled(1.0), Scaled(3.0)``); None when it is bound otherwise or more than
    once."""
    scope = where.node.body if where is not None else idx.module
    built: list[cst.BaseExpression] = []
    bindings = 0
    for n in walk(scope, into_scopes=False):
        bindings += name in names_bound_by(n)
        if type(n) is not cst.Assign or len(n.targets) != 1:
            continue
        target, value = n.targets[0].target, n.value
        at = position_bound(target, name)
        if at == -1:
            built.append(value)
        elif at is not None and type(target) is cst.Tuple and type(value) is cst.Tuple \
                and len(target.elements) == len(value.elements):
            built.append(value.elements[at].value)
    return built[0] if bindings == 1 and len(built) == 1 and type(built[0]) is cst.Call else None


def _stored_parameters(cls: "ClassInfo") -> dict[str, tuple[int, str]]:
    """``attribute -> (position, parameter)`` of each ``self.<attribute> = <parameter>`` statement of
    ``__init__``'s body (position: among the parameters after ``self``), for a parameter ``__init__`` binds
    nowhere else and an attribute stored nowhere else in it."""
    init = cls.methods.get("__init__")
    if init is None:
        return {}
    params = init.param_names()
    if not params:
        return {}
    me, names = params[0], params[1:]
    stores: dict[str, list[str | None]] = {}
    bound: set[str] = set()
    for n in walk(init.node.body):
        if type(n) is cst.Assign:
            for t in n.targets:
                target = t.target
                if type(target) is cst.Attribute and type(target.value) is cst.Name \
                        and target.value.value == me:
                    stores.setdefault(target.attr.value, []).append(
                        n.value.value if type(n.value) is cst.Name else None)
                elif type(target) is cst.Name:
                    bound.add(target.value)
        elif type(n) in (cst.AugAssign, cst.AnnAssign) and type(n.target) is cst.Attribute:
            stores.setdefault(n.target.attr.value, []).append(None)
    return {attribute: (names.index(given[0]), given[0]) for attribute, given in stores.items()
            if len(given) == 1 and given[0] in names and given[0] not in bound}


def passed_constants(built: cst.Call, caller: "FunctionInfo", position: int, name: str) -> list[Any]:
    """The constants ``built`` passes to the parameter ``name`` (at ``position``): the literal written there,
    or each value a replay of the loops around it gives; empty when one is not known."""
    if any(a.star for a in built.args):
        return []
    given = [a.value for a in built.args if a.keyword is not None and a.keyword.value == name] or \
        [a.value for i, a in enumerate(a for a in built.args if a.keyword is None) if i == position]
    if not given:
        return []
    const = literal_constant(given[0])
    if const is not NOT_LITERAL:
        return [const] if isinstance(const, _SCALARS) else []
    values = loop_argument_values(built, caller, _names(built, name, position)).get(name, [])
    return values if values and all(v is not UNKNOWN and isinstance(v, _SCALARS) for v in values) else []


def _names(built: cst.Call, name: str, position: int) -> list[str]:
    """Names for the positional arguments of ``built`` up to ``position``, ``name`` at ``position`` (what a
    replay records the arguments as)."""
    return [name if i == position else f"#{i}" for i in range(position + 1)]
