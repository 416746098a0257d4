"""What a class's methods say about its attributes, read from their code: the attribute a
``self.x`` expression names, and the literal keys ``__init__`` gives a dict attribute."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from dynalint.analysis.syntax import NOT_LITERAL, encloses, literal_constant, walk

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import ClassInfo, FunctionInfo


def is_self(function: "FunctionInfo", node: cst.CSTNode) -> bool:
    """``node`` names the first parameter (``self``) of a method."""
    if function.cls is None or function.is_static or not isinstance(node, cst.Name):
        return False
    names = function.param_names()
    return bool(names) and node.value == names[0]


def self_attribute(function: "FunctionInfo", node: cst.CSTNode) -> str | None:
    """``x`` when ``node`` is ``self.x`` in a method whose first parameter is ``self``."""
    if not isinstance(node, cst.Attribute) or not is_self(function, node.value):
        return None
    return node.attr.value


def initial_keys(cls: "ClassInfo", attr: str) -> set[object]:
    """The literal keys of the dict display ``__init__`` assigns to ``self.<attr>`` (``{"scale": ...}``)."""
    init = cls.methods.get("__init__")
    if init is None:
        return set()
    keys: set[object] = set()
    for node in walk(init.node.body, into_scopes=False):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Dict) and any(
                self_attribute(init, t.target) == attr for t in node.targets):
            for el in node.value.elements:
                if isinstance(el, cst.DictElement) and isinstance(el.key, (cst.SimpleString, cst.Integer)):
                    keys.add(el.key.evaluated_value)
    return keys


def stepped_keys(it: cst.BaseExpression, target: cst.BaseExpression
                 ) -> tuple[cst.BaseExpression, cst.Name] | None:
    """The dict a loop ``for <target> in <it>`` steps through the keys of (``d``, ``d.keys()``,
    ``d.items()``), with the name its keys are bound to."""
    if type(it) is cst.Call and not it.args and type(it.func) is cst.Attribute \
            and it.func.attr.value in ("keys", "items"):
        if it.func.attr.value == "keys":
            return (it.func.value, target) if type(target) is cst.Name else None
        key = target.elements[0].value if type(target) is cst.Tuple and len(target.elements) == 2 else None
        if type(key) is cst.Name:
            return it.func.value, key
        return None
    return (it, target) if type(target) is cst.Name else None


def keyed_like(cls: "ClassInfo", attr: str, other: str) -> bool:
    """``__init__`` builds the dict ``self.<attr>`` with a comprehension over the keys of the dict it stores
    in ``self.<other>`` (``self.params = params; self.masks = {n: ... for n, p in params.items()}``), so the
    two hold the same keys while neither gains one: storing into ``self.<attr>`` at a key of ``self.<other>``
    adds none."""
    init = cls.methods.get("__init__")
    if init is None:
        return False
    held: dict[str, str] = {}  # a parameter of `__init__` -> the attribute it is stored in
    for node in walk(init.node.body, into_scopes=False):
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.value) is cst.Name:
            stored = self_attribute(init, node.targets[0].target)
            if stored is not None and node.value.value in init.param_names():
                held[node.value.value] = stored
    for node in walk(init.node.body, into_scopes=False):
        if type(node) is not cst.Assign or type(node.value) is not cst.DictComp \
                or not any(self_attribute(init, t.target) == attr for t in node.targets):
            continue
        comp = node.value
        stepped = stepped_keys(comp.for_in.iter, comp.for_in.target)
        if stepped is None:
            continue
        source, key = stepped
        if comp.for_in.inner_for_in is None and not comp.for_in.ifs and type(comp.key) is cst.Name \
                and comp.key.value == key.value and (
                self_attribute(init, source) == other
                or type(source) is cst.Name and held.get(source.value) == other):
            return True
    return False


def stores_at_held_key(fn: "FunctionInfo", target: cst.Subscript, cls: "ClassInfo", attr: str,
                       changed: set[str]) -> bool:
    """``target`` (``self.<attr>[k]``, stored into in ``fn``) is at a key the dict holds already: ``k`` steps
    through the keys of ``self.<other>`` in a loop around it, a dict that holds the keys of ``self.<attr>``
    (itself, or one ``__init__`` builds it from: :func:`keyed_like`) and whose keys do not change
    (``changed``: the attributes that code changes)."""
    index = target.slice
    if len(index) != 1 or not isinstance(index[0].slice, cst.Index) \
            or type(index[0].slice.value) is not cst.Name:
        return False
    key = index[0].slice.value.value
    for loop in walk(fn.node.body, into_scopes=False):
        stepped = stepped_keys(loop.iter, loop.target) if type(loop) is cst.For else None
        if stepped is None or stepped[1].value != key or not encloses(loop.body, target):
            continue
        other = self_attribute(fn, stepped[0])
        if other is not None and other not in changed and (other == attr or keyed_like(cls, attr, other)):
            return True
    return False


def initial_constant(cls: "ClassInfo", attr: str) -> object:
    """The number, string or flag written out that ``__init__`` (of ``cls``) stores in ``self.<attr>``, when
    it is its one store there; :data:`~dynalint.analysis.syntax.NOT_LITERAL` otherwise."""
    init = cls.methods.get("__init__")
    if init is None:
        return NOT_LITERAL
    stored = [node.value for node in walk(init.node.body, into_scopes=False) if type(node) is cst.Assign
              and any(self_attribute(init, t.target) == attr for t in node.targets)]
    return literal_constant(stored[0]) if len(stored) == 1 else NOT_LITERAL


def initially_none(cls: "ClassInfo", attr: str) -> bool:
    """``__init__`` (of ``cls`` or the first base defining one) binds ``self.<attr>`` to ``None`` only."""
    init = cls.find_method("__init__")
    if init is None:
        return False
    values = [node.value for node in walk(init.node.body, into_scopes=False)
              if isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None
              and any(self_attribute(init, t) == attr
                      for t in ([t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]))]
    return bool(values) and all(isinstance(v, cst.Name) and v.value == "None" for v in values)
