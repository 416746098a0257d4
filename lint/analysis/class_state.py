"""What a class's methods say about its attributes, read from their code: the attribute a
``self.x`` expression names, and the literal keys ``__init__`` gives a dict attribute."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from dynalint.analysis.syntax import walk

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
