"""The Python state a loop carries from one iteration to the next, read from its body.

A ``while`` whose test breaks the graph is resumed at its header on every iteration (measured on
torch 2.13), and the locals alive there are the inputs of the resumed frame: Dynamo guards on the
Python ones. A counter or an accumulator the body changes from its own value (``i += 1``,
``scale = scale * 2``) fails that guard once, and is then dynamic; a list the body grows
(``outs.append(x)``) or a string it extends fails it on every iteration; a tensor it grows
(``out = torch.cat([out, y])``) fails the guard on its size until that size is dynamic.
"""
from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from dynalint.analysis.syntax import walk

GROWING_METHODS = frozenset({"append", "extend", "insert"})
CONCATENATIONS = frozenset({"cat", "concat", "concatenate", "hstack", "vstack", "row_stack", "column_stack", "dstack"})


@dataclass(frozen=True)
class Change:
    """How a loop body changes a name it carries."""

    name: str
    node: cst.CSTNode
    """The first statement or call that changes it."""
    grows: bool
    """A container method that makes it longer (``append``, ``extend``, ``insert``), or a concatenation
    of the value itself with more (``out = torch.cat([out, y])``)."""


def carried_changes(body: cst.BaseSuite) -> list[Change]:
    """The names ``body`` changes from their own value, in the order of their first change (nested
    functions and classes are other scopes and are not read)."""
    found: dict[str, Change] = {}

    def note(name: str, node: cst.CSTNode, grows: bool) -> None:
        if name not in found:
            found[name] = Change(name, node, grows)

    for node in walk(body, into_scopes=False):
        tp = type(node)  # libcst's node classes are not subclassed: a type test is enough
        if tp is cst.AugAssign and isinstance(node.target, cst.Name):
            note(node.target.value, node, False)
        elif tp is cst.Assign and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            if any(type(n) is cst.Name and n.value == name for n in walk(node.value, into_scopes=False)):
                note(name, node, _concatenates(node.value, name))
        elif tp is cst.Call and isinstance(node.func, cst.Attribute) \
                and isinstance(node.func.value, cst.Name) and node.func.attr.value in GROWING_METHODS:
            note(node.func.value.value, node, True)
    return list(found.values())


def _concatenates(value: cst.BaseExpression, name: str) -> bool:
    """``torch.cat([name, ...])``: the value itself, whole, joined with more."""
    if not (isinstance(value, cst.Call) and value.args and isinstance(value.func, (cst.Attribute, cst.Name))):
        return False
    func = value.func.attr.value if isinstance(value.func, cst.Attribute) else value.func.value
    parts = value.args[0].value
    if func not in CONCATENATIONS or not isinstance(parts, (cst.List, cst.Tuple)) or len(parts.elements) < 2:
        return False
    return any(isinstance(e.value, cst.Name) and e.value.value == name for e in parts.elements)
