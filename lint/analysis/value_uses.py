"""Whether a value made in a function is read again, and whether the function returns it as it is.

The recompile rules ask this of a value that crosses a graph break (a resumed frame guards on an input
only when it uses it) and of a global a helper reads (Dynamo names the guard where the value is used,
which is the caller's line when the helper only returns it).  Syntax only: names are matched by their
spelling, in source order.
"""
from __future__ import annotations

import libcst as cst

from dynalint.analysis.syntax import may_bind, parent_map, unpacked_target, walk

_PASSED_ON = (cst.Return, cst.Expr, cst.Element, cst.DictElement, cst.Yield)
"""Where a value is only handed on or dropped: nothing in the frame reads it there."""


def used_after(node: cst.CSTNode, statement: cst.CSTNode, function: cst.CSTNode) -> bool:
    """Whether the value of ``node`` is read after it is made: by the rest of its expression
    (``.shape[0]``, ``.sum()``, an operand, an argument), or through the one name a plain assignment
    (or a ``class`` statement) binds it to, read later in ``function``."""
    if isinstance(statement, cst.ClassDef) and node is statement.name:
        target: cst.BaseExpression = statement.name  # the class a `class` statement binds
    else:
        parents = parent_map(function)
        parent = parents.get(id(node))
        unpacked = unpacked_target(parents, parent) if isinstance(parent, cst.Element) else None
        if unpacked is not None:
            # `scores, inds = scores[keep], inds[keep]`: the name its item is bound to
            parent, node = unpacked
        elif isinstance(parent, _PASSED_ON):
            return False
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1) \
                and not (isinstance(parent, cst.AnnAssign) and parent.value is node):
            return parent is not None and not isinstance(parent, cst.Assign)
        target = parent.targets[0].target if isinstance(parent, cst.Assign) else parent.target
        if unpacked is not None:
            target = node
    if not isinstance(target, cst.Name):
        return False
    after = False
    for n in walk(getattr(function, "body", function), into_scopes=False):
        if n is statement:
            after = True
        elif after and isinstance(n, cst.Name) and n.value == target.value and n is not target:
            return True
    return False


def returned_as_is(node: cst.CSTNode, function: cst.CSTNode) -> bool:
    """Whether the value of ``node`` (an item or attribute of it) is what ``function`` returns."""
    parents = parent_map(function)
    parent = parents.get(id(node))
    while isinstance(parent, (cst.Subscript, cst.Attribute)) and parent.value is node:
        node, parent = parent, parents.get(id(parent))
    return isinstance(parent, cst.Return)


def read_after(function: cst.FunctionDef, statement: cst.CSTNode, name: str) -> bool:
    """``name`` is read after ``statement`` in ``function`` (in the order of its body), before anything
    binds it again there."""
    after = False
    ends: set[int] = set()
    for n in walk(function.body, into_scopes=False):
        if n is statement:
            after = True
            ends = {id(m) for m in walk(statement, into_scopes=False)}
            continue
        if not after or id(n) in ends:
            continue
        if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name) and n.target.value == name:
            return True  # (`n += 1` reads it)
        if isinstance(n, (cst.Assign, cst.AnnAssign)) and may_bind(n, name):
            return False
        if isinstance(n, cst.Name) and n.value == name:
            return True
    return False

