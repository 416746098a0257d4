"""Comprehensions that Dynamo meets as frames of their own.

On Python 3.11 a list, set or dict comprehension is a nested function that receives the iterator of its
first ``for`` as its argument.  Dynamo inlines it while it traces the function around it; but when that
function runs eagerly, or when the comprehension's body breaks the graph, the comprehension's frame is
handed to Dynamo on its own, and Dynamo cannot step most iterators it receives as an input (measured on
torch 2.13, "Missing tp_iternext", then the comprehension runs eagerly):

* the function runs eagerly after a graph break inside one of its loops ("graph break in loop") or a
  context manager it cannot enter, or from a top-level ``try`` on when its body breaks ("Failed to
  handle graph break gracefully"; a comprehension before the ``try`` ran in the graph): ``next()`` fails
  on the iterator of ``enumerate``, ``zip``, ``map``, ``reversed``, ``sorted``, a list or a dict view;
  the iterators of a ``range`` and of a tuple (also a tensor's rows) are stepped;
* the comprehension's body breaks the graph: ``next()`` fails on ``enumerate`` and ``zip`` (a list's
  iterator is stepped, and the comprehension's loop then breaks at the body's break).

Dynamo compiles such a frame only when it refers to a tensor or an ``nn.Module`` of the function, or
to the ``torch`` module (``torch.full``, ``F.relu``); a generator expression's frame is never compiled.
"""
from __future__ import annotations

import sys
from typing import Any, Iterator

import libcst as cst

from dynalint.analysis import events as E
from dynalint.analysis.eager_part import dominates
from dynalint.analysis.module_index import import_bindings
from dynalint.analysis.syntax import dotted_name, simple_statements, walk
from dynalint.analysis.values import UNKNOWN_VALUE, Kind, Value

#: builtins whose iterator Dynamo cannot step as a frame's input
_UNSTEPPED_EAGER = frozenset({"enumerate", "zip", "map", "reversed", "sorted"})
#: of those, the ones whose iterator fails also when the comprehension's own body breaks
_UNSTEPPED_BODY = frozenset({"enumerate", "zip"})
_DICT_VIEWS = frozenset({"items", "keys", "values"})
#: modules whose name in a frame's code makes Dynamo compile that frame
_TORCH_MODULES = frozenset({
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.linalg", "torch.fft",
    "torch.special", "torch.autograd", "torch.distributions", "torch.cuda",
})
_FRAMES = (cst.ListComp, cst.SetComp, cst.DictComp)
#: the types of the Python values a parameter holds that Dynamo has as constants
_CONSTANT_TYPES = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.str"})


class ComprehensionFrames:
    """The part of :class:`~dynalint.analysis.evaluator.core.FunctionEvaluator` that reports
    :class:`~dynalint.analysis.events.EagerComprehensionEvent`.  It keeps, for the function being run,
    the comprehensions of its top-level statements and which top-level statements broke the graph in a
    loop (the function then runs eagerly) or outside one."""

    def comprehension_frame(self: Any, node: cst.BaseComp, env: dict, body_broke: bool) -> None:
        """Note ``node`` (its body evaluated; ``env``: the function's names outside it): reported now when
        its body broke, or kept for :meth:`report_eager_comprehensions`."""
        if not (self.emit and self.fn is not None and isinstance(node, _FRAMES)):
            return
        builtin = self._first_iterator(node.for_in.iter)
        if builtin is None or not _compiled_frame(self, node, env):
            return
        if body_broke and builtin in _UNSTEPPED_BODY:
            self.report(E.EagerComprehensionEvent, node, why="body")
        elif self.top_index >= 0 and self.top_statement is not None \
                and not _in_handler(self.top_statement, node):
            # (also in a block of a top-level statement: an ``if`` or a ``try`` body runs in the same
            # frame, a loop's body too, at each pass once the function runs eagerly, also where the loop's
            # own break made it; an ``except`` handler runs only when something raised)
            self.pending_frames.append((node, self.statement, self.top_index))

    def sets_unset_cell(self: Any, node: cst.NamedExpr, comp: cst.BaseComp) -> bool:
        """Whether Dynamo breaks at ``node``, an assignment expression in the comprehension ``comp`` ("Read
        uninitialized cell"): on Python 3.11 the comprehension's frame holds the name it binds as a cell of
        the function, which Dynamo reads before it is set. Measured on torch 2.13: it does not break when the
        function bound the name on every path before (``total = 0``), nor when the comprehension also reads
        a parameter that Dynamo holds as an object rather than a constant (``[y * x for r in rs if (y := r)]``
        of a tensor ``x``, a module's ``self``, a list or an object; a number, string or flag breaks); of a
        parameter whose value is not known, nothing is said. Python 3.12 inlines comprehensions."""
        if sys.version_info >= (3, 12) or self.fn is None or not isinstance(node.target, cst.Name):
            return False
        params = set(self.fn.param_names())
        for name in _free_names(comp):
            if name in params and not _held_as_constant(self.env.get(name, UNKNOWN_VALUE)):
                return False
        return not _bound_before(self.fn, node.target.value, self.statement)

    def _first_iterator(self: Any, it: cst.BaseExpression) -> str | None:
        """What the comprehension steps, when Dynamo cannot step it as a frame's input: the builtin
        that makes it, ``list`` or ``dict``; None for anything else (a tuple, a range, unknown; a list display,
        ``for x in [a, b]``, which CPython builds as a tuple there)."""
        if isinstance(it, cst.ListComp) \
                or (isinstance(it, cst.Name) and _local_list(self, it.value)) \
                or (isinstance(it, cst.Attribute) and _attribute_list(self, it)):
            return "list"
        if not isinstance(it, cst.Call):
            return None
        func = it.func
        if isinstance(func, cst.Name) and func.value in _UNSTEPPED_EAGER \
                and self.is_builtin(func, func.value):
            return func.value
        if isinstance(func, cst.Attribute) and func.attr.value in _DICT_VIEWS and not it.args:
            # (the receiver as the call's event has it: the values of the nodes are not always recorded)
            call = next((ev for ev in reversed(self.p.events)
                         if ev.node is it and isinstance(ev, E.CallEvent)), None)
            if call is not None and call.receiver is not None and call.receiver.is_mapping:
                return "dict"
        return None

    def note_top_statement(self: Any, index: int, seen: int, loop_broke: bool, broke: bool | None = None
                           ) -> bool | None:
        """After top-level statement ``index`` ran (its events from ``seen`` on): whether it broke the
        graph inside a loop or at a context manager Dynamo cannot enter (the function then runs
        eagerly), or elsewhere (what follows runs in a resumed frame).  ``broke``: whether one of those
        events may break, when already asked; returns it when known (asked here or before), else None."""
        events = self.p.events[seen:]
        lock = any(isinstance(ev, E.ContextManagerEvent) and ev.function is self.fn
                   and self.p.may_break_at(ev) for ev in events)
        if loop_broke or lock:
            self.eager_at.append(index)
        elif self.top_calls_broke:
            self.broke_at.append(index)
        else:
            if broke is None:
                broke = any(map(self.p.may_break_at, events))
            if broke:
                self.broke_at.append(index)
        return broke

    def report_eager_comprehensions(self: Any) -> None:
        """Report the kept comprehensions the function reaches in the frame that runs eagerly: before a
        statement that makes it run eagerly with no break or exit between, or after one with no exit
        between."""
        if not self.pending_frames or not (self.eager_at or self.eager_from):
            return
        top = simple_statements(self.fn.node.body)
        reported = {id(ev.node) for ev in self.p.events if isinstance(ev, E.EagerComprehensionEvent)}
        for node, statement, index in self.pending_frames:
            if id(node) in reported:
                continue
            if any(_runs_from(top, eager, index) for eager in self.eager_from):
                saved, self.statement = self.statement, statement
                self.report(E.EagerComprehensionEvent, node, why="eager", in_loop=False)
                self.statement = saved
                reported.add(id(node))
                continue
            for eager in self.eager_at:
                low, high = (index, eager) if index < eager else (eager, index)
                if index < eager and any(low <= b < high for b in self.broke_at):
                    continue  # the comprehension ran in a graph that ended before the eager part
                if any(_exits(stmt) for stmt in top[low:high]):
                    continue
                saved, self.statement = self.statement, statement
                self.report(E.EagerComprehensionEvent, node, why="eager", in_loop=False)
                self.statement = saved
                reported.add(id(node))
                break


def _makes_list(evaluator: Any, value: cst.BaseExpression | None) -> bool:
    """``value`` is a list display, a list comprehension or a ``list(...)``/``sorted(...)`` call."""
    if isinstance(value, (cst.List, cst.ListComp)):
        return True
    func = value.func if isinstance(value, cst.Call) else None
    return isinstance(func, cst.Name) and func.value in ("list", "sorted") \
        and evaluator.is_builtin(func, func.value)


def _paired_value(target: cst.BaseExpression, value: cst.BaseExpression, name: str
                  ) -> cst.BaseExpression | None:
    """What ``a, b = x, y`` binds to ``name``, one of the plain names of the target, when the value is a
    display of as many elements, none starred."""
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))) \
            or len(target.elements) != len(value.elements) \
            or any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        return None
    for t, v in zip(target.elements, value.elements):
        if isinstance(t.value, cst.Name) and t.value.value == name:
            return v.value
    return None


def _local_list(evaluator: Any, name: str) -> bool:
    """``name`` is a local of the function bound only to lists (``xs = []``, ``xs = [f(a) for a in b]``,
    ``xs = sorted(...)``; ``xs += ...`` and ``xs.append(...)`` keep it one), or a parameter annotated as a
    list that the body binds only to lists if at all: not another parameter, a loop variable, a name bound
    by unpacking, ``with``, ``global`` or a nested function."""
    fn = evaluator.fn
    params = fn.node.params
    starred = {p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)}
    annotated = _list_parameter(fn.node, name)
    if (name in fn.param_names() and not annotated) or name in starred or name in fn.global_decls:
        return False
    bound = annotated
    for n in walk(fn.node.body, into_scopes=False):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                if isinstance(t.target, cst.Name) and t.target.value == name:
                    if not _makes_list(evaluator, n.value):
                        return False
                    bound = True
                elif any(isinstance(m, cst.Name) and m.value == name for m in walk(t.target)):
                    paired = _paired_value(t.target, n.value, name)  # (`texts, boxes = [], []`)
                    if paired is None or not _makes_list(evaluator, paired):
                        return False
                    bound = True
        elif isinstance(n, cst.AnnAssign) and isinstance(n.target, cst.Name) and n.target.value == name:
            if not _makes_list(evaluator, n.value):
                return False
            bound = True
        elif isinstance(n, (cst.For, cst.CompFor, cst.WithItem, cst.NamedExpr, cst.Nonlocal, cst.Global,
                            cst.ExceptHandler, cst.Del)) \
                and any(isinstance(m, cst.Name) and m.value == name for m in walk(_bound_part(n))):
            return False
        elif isinstance(n, (cst.FunctionDef, cst.ClassDef)) and n.name.value == name:
            return False
        elif isinstance(n, (cst.Import, cst.ImportFrom)) and name in _imported(n):
            return False
    return bound


def _list_parameter(node: cst.FunctionDef, name: str) -> bool:
    """``name`` is a parameter annotated as a list (``xs: List[Tensor]``, ``xs: list[Tensor]``): the frame
    receives a list (a ``Sequence`` may be a tuple, which Dynamo steps)."""
    p = node.params
    for prm in (*p.posonly_params, *p.params, *p.kwonly_params):
        if prm.name.value == name and prm.annotation is not None:
            ann = prm.annotation.annotation
            head = dotted_name(ann.value if isinstance(ann, cst.Subscript) else ann)
            return head in ("List", "list", "typing.List")
    return False


def _attribute_list(evaluator: Any, node: cst.Attribute) -> bool:
    """``node`` is ``self.name`` in a method, and the methods of its class and of the bases the checked
    code defines bind that attribute only to lists or None (``self.buffers = [[] for _ in data]``; ``+=`` keeps
    it one), at least once to a list, and no class-level assignment names it."""
    fn = evaluator.fn
    if not (fn.is_method and not fn.is_classmethod and isinstance(node.value, cst.Name)) \
            or not fn.param_names() or node.value.value != fn.param_names()[0]:
        return False
    attr = node.attr.value
    bound = False
    for cls in fn.cls.mro():
        if attr in cls.body_assigns or attr in cls.field_annotations:
            return False
        for method in cls.methods.values():
            names = method.param_names()
            if method.is_static or method.is_classmethod or not names:
                continue
            this = names[0]
            for n in walk(method.node.body, into_scopes=False):
                targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else \
                    [n.target] if isinstance(n, (cst.AnnAssign, cst.AugAssign)) else []
                for t in targets:
                    if isinstance(t, cst.Attribute) and t.attr.value == attr and isinstance(t.value, cst.Name) \
                            and t.value.value == this:
                        value = getattr(n, "value", None)
                        if isinstance(n, cst.AugAssign) or (isinstance(value, cst.Name) and value.value == "None"):
                            continue
                        if not _makes_list(evaluator, value):
                            return False
                        bound = True
                    elif any(isinstance(m, cst.Attribute) and m.attr.value == attr for m in walk(t)):
                        return False  # bound by unpacking, or through another object: not followed
    return bound


def _bound_part(node: cst.CSTNode) -> cst.CSTNode:
    """The part of a binding construct that holds the names it binds."""
    if isinstance(node, (cst.For, cst.CompFor)):
        return node.target
    if isinstance(node, cst.WithItem):
        return node.asname if node.asname is not None else cst.Name("_")
    if isinstance(node, cst.NamedExpr):
        return node.target
    if isinstance(node, cst.ExceptHandler):
        return node.name if node.name is not None else cst.Name("_")
    if isinstance(node, cst.Del):
        return node.target
    return node


def _imported(node: cst.Import | cst.ImportFrom) -> set[str]:
    return set(import_bindings(node))


def _runs_from(top: list[cst.CSTNode], eager: int, index: int) -> bool:
    """A comprehension of top-level statement ``index`` runs eagerly after the ``try`` statement
    ``eager`` broke the graph in its body: it is that statement, or a later one that the normal path
    reaches (no exit in the ``try`` body or ``else``, nor in a statement between)."""
    if index < eager:
        return False
    if index == eager:
        return True
    stmt = top[eager]
    normal = [stmt.body] + ([stmt.orelse] if getattr(stmt, "orelse", None) is not None else [])
    return not any(map(_exits, normal)) and not any(_exits(s) for s in top[eager + 1:index])


def _in_handler(statement: cst.CSTNode, node: cst.CSTNode) -> bool:
    """``node`` lies in an ``except`` handler of the top-level ``statement``."""
    handlers = getattr(statement, "handlers", ())
    return any(n is node for h in handlers for n in walk(h, into_scopes=False))


def _exits(statement: cst.CSTNode) -> bool:
    """A ``return`` or ``raise`` in ``statement`` (not in a nested function)."""
    return any(isinstance(n, (cst.Return, cst.Raise)) for n in walk(statement, into_scopes=False))


def _compiled_frame(evaluator: Any, node: cst.BaseComp, env: dict) -> bool:
    """Whether Dynamo compiles the comprehension's frame when it meets it on its own: its code refers to
    a tensor or an ``nn.Module`` of the function (its free variables) or to a torch module (a global)."""
    imports = evaluator.p.index.imports
    for name in _free_names(node):
        value = env.get(name)
        if value is not None:
            if value.kind in (Kind.TENSOR, Kind.MODULE) and not value.maybe_none:
                return True
        elif imports.get(name) in _TORCH_MODULES:
            return True
    return False


def _free_names(node: cst.BaseComp) -> Iterator[str]:
    """The names the comprehension's own frame reads from outside it (the iterable of its first ``for`` is
    evaluated outside the frame), in the order they appear."""
    outer = node.for_in.iter
    bound: set[str] = set()
    comp: cst.CompFor | None = node.for_in
    while comp is not None:
        bound.update(n.value for n in walk(comp.target) if isinstance(n, cst.Name))
        comp = comp.inner_for_in
    skip = {id(outer)}
    for n in walk(node, into_scopes=False):
        if id(n) in skip:
            skip.update(id(c) for c in walk(n))
            continue
        if isinstance(n, cst.Attribute):
            skip.add(id(n.attr))
        elif isinstance(n, cst.Arg) and n.keyword is not None:
            skip.add(id(n.keyword))
        elif isinstance(n, cst.Name) and n.value not in bound:
            yield n.value


def _held_as_constant(value: Value) -> bool:
    """A parameter's value that Dynamo holds as a constant while it traces: a number, a string, a flag,
    ``None`` (not a tensor, a module, a list or another object)."""
    if value.kind is Kind.SIZE:
        return True
    return value.kind is Kind.PYTHON and value.cls is None and not value.is_mapping and (
        value.qualname is None or value.qualname in _CONSTANT_TYPES)


def _bound_before(fn: Any, name: str, statement: cst.CSTNode) -> bool:
    """The function binds ``name`` on every path before ``statement`` runs: a parameter, or a name assigned by
    an earlier statement of a block that always runs down to ``statement``."""
    if name in fn.param_names():
        return True
    for n in walk(fn.node.body, into_scopes=False):
        if isinstance(n, cst.Assign):
            targets = [t.target for t in n.targets]
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)) and getattr(n, "value", None) is not None:
            targets = [n.target]
        else:
            continue
        if any(isinstance(t, cst.Name) and t.value == name for t in targets) and n is not statement \
                and dominates(fn, n, statement):
            return True
    return False
