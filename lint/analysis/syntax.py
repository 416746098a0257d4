"""Small, fast helpers over libcst nodes.

libcst's generic ``visit`` rebuilds every node it passes, which costs about as
much as parsing.  The analysis only needs to *read* the tree, so it walks the
dataclass fields directly and skips whitespace and punctuation.
"""
from __future__ import annotations

import dataclasses
import typing
from collections import abc
from typing import Any, Callable, Iterator

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


class _NodeTypes(dict):
    """Whether a type is a node type, by type (a dictionary look-up where ``isinstance()`` against
    libcst's abstract base classes is slow)."""

    def __missing__(self, tp: type) -> bool:
        known = self[tp] = issubclass(tp, cst.CSTNode)
        return known


_NODE_TYPES = _NodeTypes()
Reader = Callable[[cst.CSTNode], list[cst.CSTNode]]
_READERS: dict[type, Reader] = {}


def _field_kind(annotation: object) -> str:
    """What a field declared ``annotation`` holds: "text" (a string or None, never a node), "node" (a
    node), "nodes" (a sequence of nodes), or "any" (to be looked at, value by value)."""
    if annotation is str:
        return "text"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union:
        return "text" if all(a is str or a is type(None) for a in args) else "any"
    if isinstance(annotation, type) and issubclass(annotation, cst.CSTNode):
        return "node"
    if origin is not None and isinstance(origin, type) and issubclass(origin, abc.Sequence) \
            and len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], cst.CSTNode):
        return "nodes"
    return "any"


def _reader(tp: type) -> Reader:
    """The function giving the code children of a node of type ``tp``, written for its fields: the
    walks' inner loop, where looking each field up by name and testing each value's type cost more
    than the walk itself.  Fields declared as text are never read; a field declared as a node, or as
    a sequence of nodes, is taken as it is."""
    lines = ["def read(node):", "    out = []", "    add = out.append"]
    declared = {f.name: f.type for f in dataclasses.fields(tp)}  # type: ignore[arg-type]
    for name in _FIELDS.get(tp) or _fields(tp):
        kind = _field_kind(declared[name])
        if kind == "node":
            lines.append(f"    add(node.{name})")
        elif kind == "nodes":
            lines.append(f"    out += node.{name}")
        elif kind == "any":
            lines += [f"    value = node.{name}", "    vt = type(value)", "    if vt is list or vt is tuple:",
                      "        for item in value:", "            if is_node[type(item)]:",
                      "                add(item)", "    elif is_node[vt]:", "        add(value)"]
    lines.append("    return out")
    scope: dict[str, object] = {"is_node": _NODE_TYPES}
    exec("\n".join(lines), scope)  # noqa: S102 (text made from the dataclass's own field names)
    read = _READERS[tp] = scope["read"]  # type: ignore[assignment]
    return read  # type: ignore[return-value]


def child_list(node: cst.CSTNode) -> list[cst.CSTNode]:
    """:func:`children` as a list (no generator to resume per child: the walks' inner loop)."""
    tp = type(node)
    return (_READERS.get(tp) or _reader(tp))(node)


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Child nodes that carry code (not whitespace or punctuation), in source order."""
    return iter(child_list(node))


def own_nodes(statement: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes of ``statement`` outside its blocks and nested scopes, in source order."""
    stack = [statement]
    while stack:
        current = stack.pop()
        yield current
        if current is statement or not isinstance(current, (cst.BaseSuite, cst.FunctionDef, cst.ClassDef,
                                                             cst.Lambda)):
            stack.extend(reversed(list(children(current))))


def may_bind(statement: cst.CSTNode, name: str) -> bool:
    """``statement`` itself (not its blocks) may bind ``name`` (an attribute or item target counts too)."""
    for node in own_nodes(statement):
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node.name.value == name:
            return True
        if isinstance(node, (cst.AssignTarget, cst.For, cst.AugAssign, cst.AnnAssign, cst.NamedExpr,
                             cst.AsName, cst.Del)):
            target = node.name if isinstance(node, cst.AsName) else node.target
            if any(type(t) is cst.Name and t.value == name for t in walk(target)):
                return True
    return False


def evaluated_before(statement: cst.CSTNode, node: cst.CSTNode) -> list[cst.CSTNode]:
    """The parts of ``statement`` Python evaluates before ``node``: at each level down to it, the operands
    and arguments before the one that holds it (``abs(loss)`` in ``return abs(loss), loss.item()``, the
    receiver and method in ``x.reshape(int(n))``).  An assignment's targets come after its value (an augmented
    one's target is read first), as do a conditional expression's branches after its test and a ``for`` loop's
    target after its iterable; the enclosing operations themselves (the call of ``x.reshape``) come after.
    Empty when ``node`` is inside a comprehension or a lambda, whose code runs apart."""
    out: list[cst.CSTNode] = []
    current = statement
    while current is not node:
        parts = child_list(current)
        holder = next((c for c in parts if encloses(c, node)), None)
        if holder is None or isinstance(current, _SCOPES + _COMPREHENSIONS):
            return []
        first = _evaluated_first(current)
        if isinstance(current, cst.IfExp):
            earlier = [current.test] if holder is not current.test else []
        elif first is not None:
            earlier = [] if holder is first else [first, *(c for c in parts[:parts.index(holder)] if c is not first)]
        else:
            earlier = parts[:parts.index(holder)]
        out.extend(earlier)
        current = holder
    return out


def _evaluated_first(statement: cst.CSTNode) -> cst.CSTNode | None:
    """The part of an assignment or ``for`` Python evaluates before its targets (the value, the iterable)."""
    if isinstance(statement, (cst.Assign, cst.AnnAssign)):
        return statement.value
    if isinstance(statement, cst.For):
        return statement.iter
    return None


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_SCOPE_TYPES = frozenset(_SCOPES)  # libcst's node classes are not subclassed: a type test is enough


def walk(node: cst.CSTNode, *, into_scopes: bool = True) -> Iterator[cst.CSTNode]:
    """Pre-order walk of ``node`` and its descendants.

    With ``into_scopes=False`` the bodies of nested functions, classes and lambdas
    are not entered (the nested definition node itself is still yielded).
    """
    stack = [node]
    pop, push = stack.pop, stack.extend
    readers = _READERS.get
    while stack:
        current = pop()
        yield current
        tp = type(current)
        if not into_scopes and tp in _SCOPE_TYPES and current is not node:
            continue
        kids = (readers(tp) or _reader(tp))(current)
        kids.reverse()
        push(kids)


def binding_reach(scope: cst.CSTNode, name: str) -> dict[int, list[cst.Call]] | None:
    """For each plain binding ``name = ...`` among ``scope``'s own statements (by the ``id`` of its target
    name), the calls ``name(...)`` that come after it and before the next binding: with a handle rebound
    (``opt = torch.compile(f); opt(x); opt = torch.compile(g); opt(y)``), each call runs what the binding
    before it holds, also when a binding and its calls sit in one loop's body (``for fn in fns: opt =
    torch.compile(fn); opt(x)``).  None when a binding sits in a conditional block (which binding a later
    call sees depends on the run) or in a loop after a call of the name (the next pass calls it), or the
    name is bound another way (a loop variable, ``with ... as``, ``del``)."""
    reach: dict[int, list[cst.Call]] = {}
    current: list[cst.Call] | None = None
    loops: list[list[bool]] = []  # the loops the walk is in: whether a call of the name came in each so far
    stack: list[tuple[cst.CSTNode | None, bool]] = [(scope, False)]
    readers = _READERS.get
    while stack:
        node, conditional = stack.pop()
        if node is None:
            loops.pop()  # (the end of a loop's subtree)
            continue
        tp = type(node)
        target = node.target if tp is cst.AssignTarget else None  # type: ignore[attr-defined]
        if type(target) is cst.Name and target.value == name:
            if conditional or any(called[0] for called in loops):
                return None
            current = reach[id(target)] = []
        elif tp is cst.Call and type(node.func) is cst.Name and node.func.value == name:  # type: ignore
            for called in loops:
                called[0] = True
            if current is not None:
                current.append(node)  # type: ignore[arg-type]
        elif tp in _OTHER_BINDINGS and name in _bound_by(node):
            return None
        if tp in _SCOPE_TYPES and node is not scope:
            continue
        kids = (readers(tp) or _reader(tp))(node)
        if node is not scope and (tp is cst.For or tp is cst.While):
            loops.append([False])
            stack.append((None, conditional))
        main = tp is cst.If and node.orelse is None and is_main_guard(node.test)  # type: ignore[attr-defined]
        inner = conditional or (node is not scope and tp in _CONDITIONAL_TYPES and not main)
        for kid in reversed(kids):
            stack.append((kid, inner))
    return reach


#: statements whose blocks run or not, depending on the run
_CONDITIONAL_TYPES = frozenset({cst.If, cst.Try, cst.TryStar, cst.Match})
#: the other nodes that bind a name (see :func:`_bound_by`)
_OTHER_BINDINGS = frozenset({cst.For, cst.AsName, cst.Del, cst.AugAssign, cst.AnnAssign, cst.NamedExpr,
                             cst.Global, cst.Nonlocal, cst.CompFor})


class ParentLookup(typing.Protocol):
    """Each node's parent by ``id`` (a dict made by :func:`parent_map`, or a lazier map with its ``get``)."""

    def get(self, key: int, default: cst.CSTNode | None = None, /) -> cst.CSTNode | None: ...


def unpacked_target(parents: ParentLookup, element: cst.CSTNode
                    ) -> tuple[cst.Assign, cst.BaseExpression] | None:
    """The assignment and the target an element of a tuple written out is bound to, when the assignment
    unpacks the tuple one for one into targets (``cf, cg = torch.compile(f), torch.compile(g)``,
    ``a, b = x[m], y[m]``); None otherwise (a starred element on either side included)."""
    row = parents.get(id(element))
    statement = parents.get(id(row))
    if not (isinstance(row, cst.Tuple) and isinstance(statement, cst.Assign) and statement.value is row
            and len(statement.targets) == 1):
        return None
    target = statement.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(row.elements) \
            or any(isinstance(e, cst.StarredElement) for e in (*target.elements, *row.elements)):
        return None
    position = next(i for i, e in enumerate(row.elements) if e is element)
    return statement, target.elements[position].value


def position_bound(target: cst.BaseExpression, name: str) -> int | None:
    """Where a target (of an assignment, of a ``for``) binds ``name``: -1 for the whole value (``for fn in
    ...``), the index of an unpacked item (``for fn, args in ...``, ``out, state = f(x, state)``) with no
    starred item before it, None when it does not bind it so."""
    if type(target) is cst.Name:
        return -1 if target.value == name else None
    if type(target) in (cst.Tuple, cst.List):
        for i, e in enumerate(target.elements):
            if type(e) is not cst.Element:
                return None  # a starred item: the positions after it are not known
            if type(e.value) is cst.Name and e.value.value == name:
                return i
    return None


def is_main_guard(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"``: the test of a script's block, which runs once, in order, when it runs."""
    if not (isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name)
            and test.left.value == "__name__" and len(test.comparisons) == 1):
        return False
    comparison = test.comparisons[0]
    return isinstance(comparison.operator, cst.Equal) \
        and isinstance(comparison.comparator, cst.SimpleString) \
        and comparison.comparator.evaluated_value == "__main__"


def _bound_by(node: cst.CSTNode) -> set[str]:
    """The names a node of :data:`_OTHER_BINDINGS` binds."""
    tp = type(node)
    if tp is cst.Global or tp is cst.Nonlocal:
        return {n.name.value for n in node.names}  # type: ignore[attr-defined]
    target = node.name if tp is cst.AsName else node.target  # type: ignore[attr-defined]
    return set(assigned_names(target))


def is_generator(fn: cst.FunctionDef) -> bool:
    """``fn``'s body holds a ``yield`` of its own (not of a nested function, class or lambda)."""
    return any(type(n) is cst.Yield for n in walk(fn.body, into_scopes=False))


def encloses(outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    """``inner`` is ``outer`` or one of its descendants (by identity)."""
    return any(n is inner for n in walk(outer))


class Spans:
    """Where each node under ``root`` sits in a pre-order walk of it and how many nodes its subtree
    holds: :meth:`encloses` answers :func:`encloses` for a node under ``root`` by comparing two
    positions, where :func:`encloses` walks ``outer`` for each question (code that asks it of every
    pair of breaks and blocks of a function walked the function again and again)."""

    __slots__ = ("root", "_start", "_size", "_shared")

    def __init__(self, root: cst.CSTNode) -> None:
        self.root = root  # keeps the nodes whose ids are the keys alive
        nodes: list[cst.CSTNode] = []
        up: list[int] = []
        stack: list[tuple[cst.CSTNode, int]] = [(root, -1)]
        pop, push, add, add_up = stack.pop, stack.append, nodes.append, up.append
        readers = _READERS.get
        while stack:
            current, parent = pop()
            at = len(nodes)
            add(current)
            add_up(parent)
            tp = type(current)
            kids = (readers(tp) or _reader(tp))(current)
            for i in range(len(kids) - 1, -1, -1):
                push((kids[i], at))
        size = [1] * len(nodes)
        for at in range(len(nodes) - 1, 0, -1):
            size[up[at]] += size[at]
        start: dict[int, int] = {}
        shared: set[int] = set()  # a node object met twice: its position is not one place
        for at, node in enumerate(nodes):
            if id(node) in start:
                shared.add(id(node))
            start[id(node)] = at
        self._start, self._size, self._shared = start, size, shared

    def encloses(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        """:func:`encloses` (``outer`` not under ``root``: answered by that walk)."""
        at = self._start.get(id(outer))
        if at is None or (self._shared and (id(outer) in self._shared or id(inner) in self._shared)):
            return encloses(outer, inner)
        where = self._start.get(id(inner))
        # a node the walk of ``root`` never met is not met by the walk of ``outer``, a part of it
        return where is not None and at <= where < at + self._size[at]


def walk_with_parents(node: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, cst.CSTNode | None]]:
    """:func:`walk` of ``node`` (into scopes), each node with its parent (None for ``node``): one walk
    where a parent map would otherwise list each node's children twice."""
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(node, None)]
    pop, push = stack.pop, stack.append
    readers = _READERS.get
    while stack:
        current, parent = pop()
        yield current, parent
        tp = type(current)
        kids = (readers(tp) or _reader(tp))(current)
        for i in range(len(kids) - 1, -1, -1):
            push((kids[i], current))


def suites_between(outer: cst.CSTNode, inner: cst.CSTNode) -> list[cst.BaseSuite] | None:
    """The blocks (indented or one-line suites) that hold ``inner`` inside ``outer``, outermost first;
    None when ``inner`` is not inside ``outer``."""
    parents: dict[int, cst.CSTNode | None] = {}
    for node, parent in walk_with_parents(outer):
        parents[id(node)] = parent
        if node is inner:
            break
    else:
        return None
    blocks: list[cst.BaseSuite] = []
    node: cst.CSTNode | None = parents[id(inner)]
    while node is not None:
        if isinstance(node, cst.BaseSuite):
            blocks.append(node)
        node = parents.get(id(node))
    return blocks[::-1]


def nodes_and_parents(node: cst.CSTNode) -> tuple[list[cst.CSTNode], dict[int, cst.CSTNode]]:
    """The nodes of :func:`walk_with_parents` in its order, and each one's parent by ``id`` (``node``
    has none): what a walk with parents is for, without a generator to resume and a pair to make
    per node."""
    order: list[cst.CSTNode] = []
    parents: dict[int, cst.CSTNode] = {}
    add = order.append
    readers = _READERS.get
    stack = [node]
    pop, push = stack.pop, stack.extend
    while stack:
        current = pop()
        add(current)
        tp = type(current)
        kids = (readers(tp) or _reader(tp))(current)
        if kids:
            for kid in kids:
                parents[id(kid)] = current
            kids.reverse()
            push(kids)
    return order, parents


_LAST_PARENTS: tuple[cst.CSTNode | None, dict[int, cst.CSTNode]] = (None, {})


def parent_map(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    """Each node's parent under ``root``, by ``id``.  The map of the last root asked for is kept:
    the fixers and the fix engine ask for the same module many times in a row."""
    global _LAST_PARENTS
    if _LAST_PARENTS[0] is not root:
        _LAST_PARENTS = (root, nodes_and_parents(root)[1])
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


NOT_LITERAL = object()
"""What :func:`literal_constant` gives for an expression that is no literal."""


def literal_constant(node: cst.BaseExpression) -> object:
    """The value of a literal number, string or bool, a negated number or ``float(<literal>)``
    (``float("inf")``; a NaN, never equal to itself, is none); :data:`NOT_LITERAL` for anything else."""
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        try:
            return literal_value(node)
        except Exception:
            return NOT_LITERAL
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, (cst.Integer, cst.Float)):
        return -literal_value(node.expression)  # type: ignore[operator]
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "float" \
            and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
        inner: Any = literal_constant(node.args[0].value)
        try:
            value = float(inner) if inner is not NOT_LITERAL and not isinstance(inner, bool) else None
        except (TypeError, ValueError):
            value = None
        return value if value is not None and value == value else NOT_LITERAL
    return NOT_LITERAL


def dotted_name(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while type(node) is cst.Attribute:  # libcst's node classes are not subclassed: a type test is enough
        parts.append(node.attr.value)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is cst.Name:
        parts.append(node.value)  # type: ignore[attr-defined]
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
    tp = type(target)  # (libcst's node classes are not subclassed: a type test is enough)
    if tp is cst.Name:
        yield target.value
    elif tp is cst.Tuple or tp is cst.List:
        for el in target.elements:
            yield from assigned_names(el.value)
    elif tp is cst.StarredElement:
        yield from assigned_names(target.value)


def contains_exit(block: cst.BaseSuite) -> bool:
    """Whether a suite contains a ``break`` or ``return`` that leaves the enclosing loop."""
    stack: list[tuple[cst.CSTNode, bool]] = [(block, False)]
    while stack:
        node, nested_loop = stack.pop()
        tp = type(node)  # libcst's node classes are not subclassed: a type test is enough
        if tp is cst.Return or (tp is cst.Break and not nested_loop):
            return True
        if tp in _SCOPE_TYPES:
            continue
        # a break inside a nested loop exits only that loop; a return still exits
        inner = nested_loop or tp is cst.For or tp is cst.While
        stack.extend((child, inner) for child in child_list(node))
    return False


def is_none(node: cst.CSTNode | None) -> bool:
    """``node`` is the name ``None``."""
    return isinstance(node, cst.Name) and node.value == "None"
