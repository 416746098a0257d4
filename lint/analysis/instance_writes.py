"""Whether the changes a module makes to a global instance reach only the values of its tensors.

Dynamo guards on a tensor's metadata (sizes, strides, dtype, device), not on its values, so a global
object whose own methods only write into its tensors (``self.seen[idx] = labels``,
``self.count.add_(1)``) fails no guard however often they run, while one that counts in a Python
attribute (``self.steps += 1``) recompiles what reads it (measured on torch 2.13).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from dynalint.analysis.class_state import self_attribute
from dynalint.analysis.module_index import MUTATING_METHODS
from dynalint.analysis.syntax import parent_map, root_name, walk

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import ClassInfo, FunctionInfo, ModuleIndex


def changes_only_tensors(idx: "ModuleIndex", name: str) -> bool:
    """Whether the global ``name`` is bound once, at module level, to an instance of a class of the
    module, and every change the module makes to it is a call of a method that class defines that
    writes into the instance's tensors only (an item store into, or an in-place method of, an
    attribute ``__init__`` sets from a ``torch`` call): no Python value Dynamo guards on changes."""
    bound = idx.globals.get(name, ())
    if len(bound) != 1 or not isinstance(bound[0], cst.Call) or not isinstance(bound[0].func, cst.Name):
        return False
    cls = idx.classes.get(bound[0].func.value)
    if cls is None:
        return False
    tensors = _tensor_attributes(cls)
    parents = parent_map(idx.module)
    for node in walk(idx.module):
        if isinstance(node, (cst.Global, cst.Nonlocal)) and any(n.name.value == name for n in node.names):
            return False
        if not (isinstance(node, cst.Name) and node.value == name):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue
        if isinstance(parent, cst.AssignTarget) and parent.target is node \
                and getattr(parents.get(id(parent)), "value", None) is bound[0]:
            continue  # the binding itself
        if isinstance(parent, cst.Attribute) and parent.value is node:
            call = parents.get(id(parent))
            if isinstance(call, cst.Call) and call.func is parent:
                method = cls.methods.get(parent.attr.value)
                if method is not None:
                    if not _writes_only_tensors(method, tensors):
                        return False
                    continue
                if parent.attr.value in MUTATING_METHODS:
                    return False
                continue
        if _stored_through(node, parents):
            return False
    return True


def rebuilt_alike(idx: "ModuleIndex", name: str) -> bool:
    """Whether every binding of the global ``name`` is the same call, written alike (``POS_TABLE =
    torch.randn(16, 8)`` reloaded): a tensor made again with the same sizes, dtype and device fails no guard
    (measured on torch 2.13; ``torch.zeros(4, dtype=torch.float64)`` after ``torch.ones(4)`` recompiles)."""
    bound = idx.globals.get(name, ())
    place = idx.mutated_globals.get(name)
    values = [*bound, *([place[0].value] if place is not None and isinstance(place[0], cst.Assign) else [])]
    if len(values) < 2 or not all(isinstance(v, cst.Call) for v in values) or place is None \
            or not isinstance(place[0], cst.Assign):
        return False
    texts = {cst.Module([]).code_for_node(v) for v in values}
    return len(texts) == 1


def _stored_through(node: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> bool:
    """``node`` is (the root of) an assignment, augmented assignment or ``del`` target, or handed to
    ``setattr``/``delattr``."""
    current = node
    parent = parents.get(id(current))
    while isinstance(parent, (cst.Attribute, cst.Subscript)) and parent.value is current:
        current, parent = parent, parents.get(id(parent))
    while isinstance(parent, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)):
        parent = parents.get(id(parent))
    if isinstance(parent, (cst.AssignTarget, cst.Del)) or isinstance(parent, (cst.AugAssign, cst.AnnAssign)) \
            and parent.target is current:
        return True
    if isinstance(parent, cst.Arg):
        call = parents.get(id(parent))
        return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) \
            and call.func.value in ("setattr", "delattr")
    return False


def _tensor_attributes(cls: "ClassInfo") -> set[str]:
    """Attributes ``__init__`` sets once from a ``torch`` call (``self.seen = torch.full(...)``)."""
    init = cls.methods.get("__init__")
    if init is None:
        return set()
    out: set[str] = set()
    for node in walk(init.node.body, into_scopes=False):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call) \
                and root_name(node.value.func) == "torch":
            out |= {a for t in node.targets if (a := self_attribute(init, t.target)) is not None}
    return out


def _writes_only_tensors(method: "FunctionInfo", tensors: set[str]) -> bool:
    """``method`` changes nothing on ``self`` but the values in the tensors ``tensors`` (and calls no
    method of ``self``, whose writes are not followed)."""
    parents = parent_map(method.node)
    for node in walk(method.node.body, into_scopes=False):
        attr = self_attribute(method, node)
        if attr is None:
            continue
        parent = parents.get(id(node))
        if isinstance(parent, cst.Call) and parent.func is node:
            return False  # a method of self: not followed
        if isinstance(parent, cst.Subscript) and parent.value is node:
            if attr in tensors:
                continue  # an item of a tensor, read or written
            if _stored_through(parent, parents):
                return False
            continue
        if isinstance(parent, cst.Attribute) and parent.value is node:
            call = parents.get(id(parent))
            if isinstance(call, cst.Call) and call.func is parent:
                name = parent.attr.value
                if attr in tensors and name.endswith("_") and name not in _RESHAPING:
                    continue  # an in-place operation on a tensor's values
                if attr not in tensors and name not in MUTATING_METHODS:
                    continue
                return False
        if _stored_through(node, parents):
            return False
    return True


_RESHAPING = frozenset({"resize_", "resize_as_", "set_", "squeeze_", "unsqueeze_", "transpose_", "t_",
                        "as_strided_", "swapdims_", "swapaxes_"})
"""In-place tensor methods that change its sizes or strides (which Dynamo guards on)."""
