"""Containers a caller changes in place between two calls of a compiled function it passes them to.

Dynamo guards on a list, dict, set or deque argument's length (a dict's keys) and on the Python values
of the elements the function reads, as it guards on a display passed at each call; when the caller keeps
one container and changes it between calls (``history.append(y)`` after ``f(x, history)``, ``coeffs["mse"]
= 0.5``, ``disabled.add(2)``), the next call fails those guards and recompiles (measured on torch 2.13:
``not history``, then ``len(history) == 1``, ``len(history) == 2``... at every call of a growing list).

Only what the caller's own code shows is followed: a name bound in the caller to a container display or
constructor, and nothing else, and changed by a statement of the caller that runs between two calls passing
it: in the loop that makes the call (the name bound outside that loop), or between two such calls in the
order of the caller's statements.  A store of an element counts when it stores a literal number, string or
bool (or a tuple of them) into an element the function reads, or adds a key to a dict display of literal
keys; a change of length counts when the function mentions the container at all (iterating, ``len``,
indexing).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.syntax import NOT_LITERAL, dotted_name, literal_constant, walk

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import FunctionInfo

#: what builds a Python container (besides a display)
_CONTAINER_CALLS = frozenset({"list", "dict", "set", "collections.deque", "deque", "collections.OrderedDict",
                              "OrderedDict", "collections.defaultdict", "defaultdict"})


def changed_between_calls(caller: "FunctionInfo", calls: list[cst.Call], name: str,
                          reads: "set[Any] | bool | None") -> cst.CSTNode | None:
    """A statement of ``caller`` that changes in place, between two of the ``calls`` (of one compiled
    function, each passing the caller's variable ``name`` to a parameter of which the function reads
    ``reads``, as :func:`~dynalint.analysis.entry_arguments._element_reads` gives it), the container that
    variable holds, where the function's guards see the change; None when there is none."""
    if reads is None:
        return None
    body = caller.node.body
    bindings = [n for n in walk(body, into_scopes=False) if _binds(n, name)]
    if not bindings or not all(_container(b) for b in bindings):
        return None
    keys = _display_keys(bindings)
    changes = [n for n in walk(body, into_scopes=False) if _guarded_change(n, name, reads, keys)]
    if not changes:
        return None
    loops = [{id(m) for m in walk(n, into_scopes=False)} for n in walk(body, into_scopes=False)
             if isinstance(n, (cst.For, cst.While))]
    for change in changes:
        for loop in loops:
            if id(change) in loop and any(id(call) in loop for call in calls) \
                    and not any(id(b) in loop for b in bindings):
                return change  # each iteration changes it, then calls again
    order = {id(n): i for i, n in enumerate(walk(body, into_scopes=False))}
    for change in changes:
        at = order[id(change)]
        before = [order[id(c)] for c in calls if id(c) in order and order[id(c)] < at]
        after = [order[id(c)] for c in calls if id(c) in order and order[id(c)] > at]
        if before and after and not any(max(before) < order[id(b)] < min(after) for b in bindings):
            return change
    return None


def _binds(node: cst.CSTNode, name: str) -> bool:
    """``node`` is an assignment whose target is ``name`` (or an annotated one)."""
    if isinstance(node, cst.Assign):
        return any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets)
    if isinstance(node, cst.AnnAssign):
        return isinstance(node.target, cst.Name) and node.target.value == name and node.value is not None
    return isinstance(node, (cst.For, cst.With, cst.NamedExpr)) and any(
        isinstance(n, cst.Name) and n.value == name for n in _targets(node))


def _targets(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    if isinstance(node, cst.For):
        yield from walk(node.target)
    elif isinstance(node, cst.With):
        for item in node.items:
            if item.asname is not None:
                yield from walk(item.asname.name)
    elif isinstance(node, cst.NamedExpr):
        yield node.target


def _container(binding: cst.CSTNode) -> bool:
    """The assignment binds a list, dict or set display, or a Python container made empty or from one."""
    value = binding.value if isinstance(binding, (cst.Assign, cst.AnnAssign)) else None
    if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
        return True
    return isinstance(value, cst.Call) and dotted_name(value.func) in _CONTAINER_CALLS


def _display_keys(bindings: list[cst.CSTNode]) -> frozenset[Any] | None:
    """The literal keys of the dict display the variable is bound to (once), when it is one."""
    if len(bindings) != 1 or not isinstance(getattr(bindings[0], "value", None), cst.Dict):
        return None
    keys = []
    for element in bindings[0].value.elements:  # type: ignore[union-attr]
        key = literal_constant(element.key) if isinstance(element, cst.DictElement) else NOT_LITERAL
        if key is NOT_LITERAL:
            return None
        keys.append(key)
    return frozenset(keys)


def _guarded_change(node: cst.CSTNode, name: str, reads: "set[Any] | bool",
                    keys: frozenset[Any] | None) -> bool:
    """``node`` changes the container ``name`` holds where the function's guards see it."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _is(node.func.value, name):
        return node.func.attr.value in K.LENGTH_CHANGES
    if isinstance(node, cst.Del):
        return any(isinstance(n, cst.Subscript) and _is(n.value, name) for n in walk(node.target))
    if isinstance(node, cst.AugAssign):
        return _is(node.target, name) and isinstance(node.operator, (cst.AddAssign, cst.BitOrAssign))
    if not isinstance(node, cst.Assign):
        return False
    for target in node.targets:
        t = target.target
        if not (isinstance(t, cst.Subscript) and _is(t.value, name) and len(t.slice) == 1
                and isinstance(t.slice[0].slice, cst.Index)):
            continue
        key = literal_constant(t.slice[0].slice.value)
        if keys is not None and key is not NOT_LITERAL and key not in keys:
            return True  # a new key: the dict's keys are guarded
        if _literal(node.value) and (reads is True or key in reads):
            return True  # a new Python value of an element the function reads
    return False


def _literal(node: cst.BaseExpression) -> bool:
    """A literal number, string or bool, or a tuple or list display of them (``(6, 6, 8, 8)``)."""
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(isinstance(e, cst.Element) and _literal(e.value) for e in node.elements)
    return literal_constant(node) is not NOT_LITERAL


def _is(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def key_read(node: cst.CSTNode, statement: cst.CSTNode) -> object:
    """The literal key ``node`` (an expression of ``statement``) is subscripted with there (``"version"`` of
    ``self.tags["version"]``); :data:`~dynalint.analysis.syntax.NOT_LITERAL` for any other use of it
    (iterated, ``len``, handed on: every key and the length are guarded)."""
    for n in walk(statement):
        if type(n) is cst.Subscript and n.value is node and len(n.slice) == 1 \
                and type(n.slice[0].slice) is cst.Index:
            return literal_constant(n.slice[0].slice.value)
    return NOT_LITERAL


def attribute_read(node: cst.CSTNode, statement: cst.CSTNode) -> str | None:
    """The attribute ``node`` (an expression of ``statement``) is read or stored through there
    (``"step_count"`` of ``model.step_count``); None for any other use of it (called, handed on: any attribute
    may be read)."""
    return next((n.attr.value for n in walk(statement) if type(n) is cst.Attribute and n.value is node), None)


def read_before_stored(target: cst.Subscript, statement: cst.CSTNode) -> bool:
    """The value stored into ``target`` reads ``target`` itself (``self.mom[n] = 0.9 * self.mom[n] + g``): the
    key is in the dict already (else the read raises), so the store adds none."""
    value = getattr(statement, "value", None)
    return type(statement) is cst.Assign and value is not None and any(
        type(n) is cst.Subscript and n.deep_equals(target) for n in walk(value))
