"""Small, fast helpers over libcst nodes.

libcst's generic ``visit`` rebuilds every node it passes, which costs about as
much as parsing.  The analysis only needs to *read* the tree, so it walks the
dataclass fields directly and skips whitespace and punctuation.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

import libcst as cst

_SKIP_FIELDS = frozenset({
    "lpar", "rpar", "whitespace_before", "whitespace_after", "leading_lines", "whitespace", "comma",
    "semicolon", "trailing_whitespace", "header", "footer", "lines_after_decorators", "leading_whitespace",
    "whitespace_after_def", "whitespace_before_colon", "whitespace_after_name", "whitespace_before_params",
    "whitespace_after_colon", "whitespace_after_class", "whitespace_after_star", "whitespace_after_arg",
    "whitespace_before_args", "whitespace_after_func", "whitespace_before_as", "whitespace_after_as",
    "whitespace_before_equal", "whitespace_after_equal", "whitespace_before_indicator",
    "whitespace_after_indicator", "whitespace_after_await", "whitespace_after_lambda",
    "whitespace_before_from", "whitespace_after_from", "whitespace_before_in", "whitespace_after_in",
    "whitespace_before_test", "whitespace_after_test", "whitespace_before_if", "whitespace_after_if",
    "whitespace_before_else", "whitespace_after_else", "whitespace_after_for", "whitespace_before_for",
    "whitespace_after_assert", "whitespace_after_del", "whitespace_after_return", "whitespace_after_raise",
    "whitespace_after_import", "whitespace_after_global", "whitespace_after_nonlocal",
    "whitespace_after_walrus", "whitespace_before_walrus", "whitespace_after_cases", "asynchronous",
    "whitespace_before_value", "whitespace_after_dot", "whitespace_before_dot", "whitespace_after_yield",
    "dot", "colon", "equal", "star", "operator", "newline", "whitespace_after_indent",
})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(tp: type) -> tuple[str, ...]:
    names = _FIELDS.get(tp)
    if names is None:
        names = _FIELDS[tp] = tuple(
            f.name for f in dataclasses.fields(tp) if f.name not in _SKIP_FIELDS  # type: ignore[arg-type]
        )
    return names


_IS_NODE: dict[type, bool] = {}


def _is_node(tp: type) -> bool:
    # isinstance() against libcst's abstract base classes is slow; cache per type
    known = _IS_NODE.get(tp)
    if known is None:
        known = _IS_NODE[tp] = issubclass(tp, cst.CSTNode)
    return known


def child_list(node: cst.CSTNode) -> list[cst.CSTNode]:
    """:func:`children` as a list (no generator to resume per child: the walks' inner loop)."""
    out: list[cst.CSTNode] = []
    is_node = _IS_NODE.get
    tp = type(node)
    for name in _FIELDS.get(tp) or _fields(tp):
        value = getattr(node, name)
        vt = type(value)
        if vt is list or vt is tuple:
            for item in value:
                known = is_node(type(item))
                if known or (known is None and _is_node(type(item))):
                    out.append(item)
        else:
            known = is_node(vt)
            if known or (known is None and _is_node(vt)):
                out.append(value)
    return out


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Child nodes that carry code (not whitespace or punctuation), in source order."""
    return iter(child_list(node))


_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_SCOPE_TYPES = frozenset(_SCOPES)  # libcst's node classes are not subclassed: a type test is enough


def walk(node: cst.CSTNode, *, into_scopes: bool = True) -> Iterator[cst.CSTNode]:
    """Pre-order walk of ``node`` and its descendants.

    With ``into_scopes=False`` the bodies of nested functions, classes and lambdas
    are not entered (the nested definition node itself is still yielded).
    """
    stack = [node]
    pop, push = stack.pop, stack.extend
    while stack:
        current = pop()
        yield current
        if not into_scopes and type(current) in _SCOPE_TYPES and current is not node:
            continue
        kids = child_list(current)
        kids.reverse()
        push(kids)


def encloses(outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    """``inner`` is ``outer`` or one of its descendants (by identity)."""
    return any(n is inner for n in walk(outer))


def walk_with_parents(node: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, cst.CSTNode | None]]:
    """:func:`walk` of ``node`` (into scopes), each node with its parent (None for ``node``): one walk
    where a parent map would otherwise list each node's children twice."""
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(node, None)]
    pop, push = stack.pop, stack.append
    while stack:
        current, parent = pop()
        yield current, parent
        kids = child_list(current)
        for i in range(len(kids) - 1, -1, -1):
            push((kids[i], current))


_LAST_PARENTS: tuple[cst.CSTNode | None, dict[int, cst.CSTNode]] = (None, {})


def parent_map(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    """Each node's parent under ``root``, by ``id``.  The map of the last root asked for is kept:
    the fixers and the fix engine ask for the same module many times in a row."""
    global _LAST_PARENTS
    if _LAST_PARENTS[0] is not root:
        parents: dict[int, cst.CSTNode] = {id(n): parent for n, parent in walk_with_parents(root)
                                           if parent is not None}
        _LAST_PARENTS = (root, parents)
    return _LAST_PARENTS[1]


def string_literal(node: cst.CSTNode) -> bool:
    """A ``str`` literal, implicit concatenations of them included (not an f-string, not bytes)."""
    return isinstance(node, (cst.SimpleString, cst.ConcatenatedString)) and \
        isinstance(literal_value(node), str)


def literal_value(node: cst.CSTNode) -> object:
    """A literal's value, as libcst's ``evaluated_value`` gives it (and raises).  That one compiles the
    literal with CPython; a decimal integer, or a string without escapes or carriage returns (which
    the tokenizer would translate) or a bytes prefix, is its own text."""
    if type(node) is cst.SimpleString:
        text = node.value
        quote = text[-1]
        start = text.index(quote)
        prefix = text[:start].lower()
        if prefix in ("", "u", "r") and "\r" not in text and (prefix == "r" or "\\" not in text):
            size = 3 if text.startswith(quote * 3, start) and len(text) - start >= 6 else 1
            return text[start + size:len(text) - size]
    elif type(node) is cst.Integer and node.value.isdigit() and node.value.isascii():
        return int(node.value)
    return node.evaluated_value  # type: ignore[attr-defined]


def dotted_name(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def decorator_target(dec: cst.Decorator) -> cst.BaseExpression:
    """The decorator expression without a call: ``torch.compile`` for ``@torch.compile(mode=...)``."""
    expr = dec.decorator
    return expr.func if isinstance(expr, cst.Call) else expr


def simple_statements(block: cst.BaseSuite) -> list[cst.CSTNode]:
    """The statements of a suite, flattening ``a; b`` lines into their small statements."""
    out: list[cst.CSTNode] = []
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]  # SimpleStatementSuite
    for stmt in body:
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            out.extend(stmt.body)
        else:
            out.append(stmt)
    return out


def root_name(node: cst.CSTNode) -> str | None:
    """``a`` for ``a``, ``a.b[i].c``...: the name an attribute/subscript chain starts from."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def single_index(node: cst.CSTNode) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """``(base, index)`` of ``base[index]`` with one plain index (no slice, no ``a, b``)."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return node.value, node.slice[0].slice.value
    return None


def assigned_names(target: cst.CSTNode) -> Iterator[str]:
    """Names bound by an assignment target (``a``, ``a, (b, *c)``)."""
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from assigned_names(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from assigned_names(target.value)


def contains_exit(block: cst.BaseSuite) -> bool:
    """Whether a suite contains a ``break`` or ``return`` that leaves the enclosing loop."""
    stack: list[tuple[cst.CSTNode, bool]] = [(block, False)]
    while stack:
        node, nested_loop = stack.pop()
        if isinstance(node, cst.Return) or (isinstance(node, cst.Break) and not nested_loop):
            return True
        if isinstance(node, _SCOPES):
            continue
        # a break inside a nested loop exits only that loop; a return still exits
        inner = nested_loop or isinstance(node, (cst.For, cst.While))
        stack.extend((child, inner) for child in children(node))
    return False
