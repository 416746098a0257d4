"""The paths a frame resumed after a graph break may take first.

Dynamo compiles a resumed frame the first time it runs; when that first run reaches the end of the
frame without a graph operation, Dynamo skips the frame from then on and guards on nothing it
receives (measured on torch 2.13).  Which branch of an ``if`` the first run takes is in general not
known, so a branch that returns at once without a graph operation makes what the frame guards on
uncertain.

A graph break inside a loop is another matter: Dynamo cannot resume inside the loop, so it gives up
on the frame it is tracing and runs that frame eagerly (:mod:`dynalint.analysis.eager_part`, which
the break list and the recompile rules share).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import libcst as cst

from dynalint.analysis.breaks import find_breaks
from dynalint.analysis.eager_part import EagerPart, eager_part, resumable  # noqa: F401 (for the recompile rules)
from dynalint.analysis.events import ArithmeticEvent, AttributeEvent, CallEvent, ContextManagerEvent
from dynalint.analysis.syntax import encloses, simple_statements, walk
from dynalint.analysis.values import Kind

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.breaks import Analysed, Break, Breaks
    from dynalint.analysis.events import Event
    from dynalint.analysis.module_index import FunctionInfo
    from dynalint.analysis.program import Program
    from dynalint.config.settings import Settings


def branch_may_skip(program: "Analysed", breaks: "Breaks", brk: "Break") -> bool:
    """The break is in the test of an ``if`` one of whose branches returns at once without a graph
    operation (``return random.randrange(n)``, ``return 0``), or, with no ``else``, is followed by such a
    ``return`` (``if ent.item() < 0.05: ...`` then ``return priors``): when the first call takes that
    path, the resumed frame has no graph and Dynamo skips it from then on, and which path the first call
    takes is not known (measured on torch 2.13: with the other branch first, the resumed frame is compiled
    and guarded on the value)."""
    statement = brk.statement
    if not isinstance(statement, cst.If) or not any(n is brk.node for n in walk(statement.test)):
        return False
    firsts = [_first_statement(statement.body)]
    if isinstance(statement.orelse, cst.Else):
        firsts.append(_first_statement(statement.orelse.body))
    elif statement.orelse is None:
        body = simple_statements(brk.event.function.node.body)
        at = next((i for i, s in enumerate(body) if s is statement), None)
        firsts.append(body[at + 1] if at is not None and at + 1 < len(body) else None)
    return any(isinstance(first, cst.Return) and _python_only(program, breaks, first) for first in firsts)


def _first_statement(block: cst.BaseSuite) -> cst.CSTNode | None:
    statements = simple_statements(block)
    return statements[0] if statements else None


def _python_only(program: "Analysed", breaks: "Breaks", node: cst.CSTNode) -> bool:
    """Everything the analysis saw evaluated in ``node`` is Python: calls of Python values into no
    function of the project (``random.randrange(self.n)``) and attributes that are not tensors or
    modules; no graph operation, no break."""
    inside = {id(n) for n in walk(node)}
    if any(id(b.node) in inside for b in breaks):
        return False
    for ev in program.events:
        if id(ev.node) not in inside:
            continue
        if isinstance(ev, AttributeEvent):
            if ev.write or ev.value is None or ev.value.kind in (Kind.TENSOR, Kind.MODULE, Kind.UNKNOWN):
                return False
        elif isinstance(ev, CallEvent):
            values = [*ev.args, *ev.kwargs.values(), ev.result]
            if ev.callee is not None or ev.module is not None or ev.result is None \
                    or any(v is not None and v.kind in (Kind.TENSOR, Kind.MODULE, Kind.UNKNOWN) for v in values) \
                    or ev.receiver is not None and ev.receiver.kind in (Kind.TENSOR, Kind.MODULE):
                return False  # (the receiver of a module's function, `random`, is not known)
        else:
            return False
    return True


#: methods of Python's own lists, dicts, sets and strings that take a value
_BUILTIN_TYPE_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft",
                                   "format", "join"})


def builtin_method_held(at: "Break", calls: dict[int, CallEvent]) -> CallEvent | None:
    """The call of a method of a Python list, dict, set or string (``losses.append(...)``,
    ``"{}".format(...)``) whose arguments hold the break ``at``: Dynamo evaluates the method before its
    arguments, so the frame
    resumed at the break receives the bound method on its stack and guards on that object, which is made
    anew at every call (measured on torch 2.13: "Cache line invalidated because L['___stack0'] got
    deallocated" at every call, 8 recompiles over 10 calls; ``self.helper(v)`` or a method of an object
    of the checked code guards on the value alone and recompiles once)."""
    if at.statement is None:
        return None
    for node in walk(at.statement):
        if type(node) is not cst.Call or type(node.func) is not cst.Attribute \
                or node.func.attr.value not in _BUILTIN_TYPE_METHODS \
                or not any(encloses(a.value, at.node) for a in node.args):
            continue
        event = calls.get(id(node))
        receiver = event.receiver if event is not None else None
        if receiver is not None and receiver.cls is None and receiver.func is None \
                and receiver.kind in (Kind.SEQUENCE, Kind.PYTHON, Kind.UNKNOWN) and receiver.qualname is None:
            return event
    return None


def breaks_between(breaks: "Breaks", fn: "FunctionInfo", start: cst.CSTNode, end: cst.CSTNode) -> list["Break"]:
    """The breaks of ``fn`` after ``start`` and before ``end`` (nodes of ``fn``), in source order."""
    order = breaks.positions(fn)
    lo, hi = order.get(id(start), -1), order.get(id(end), -1)
    return sorted((b for b in breaks.all if b.event.function is fn and lo < order.get(id(b.node), -1) < hi),
                  key=lambda b: order[id(b.node)])


def runs_eagerly(breaks: "Breaks", ev: "Event") -> bool:
    """``ev`` lies in the part of its function that Dynamo runs eagerly (:func:`eager_part`)."""
    part = eager_part(breaks, ev.function)
    return part is not None and part.eager(ev.statement)


def traced_on_early_return(breaks: "Breaks", ev: "Event") -> bool:
    """``ev`` lies in the part of its function Dynamo runs eagerly (:func:`runs_eagerly`), before the loop
    that makes it so, and an ``if`` of the function's body between the two returns: a call that takes that
    branch never reaches the loop, so Dynamo compiles the frame for it and guards what ``ev`` reads (measured
    on torch 2.13: ``self.micro_step += 1`` after ``loss.backward()``, then ``if accumulate: return ...``
    before a loop that breaks, recompiles on ``self.micro_step == 0``)."""
    part = eager_part(breaks, ev.function)
    if part is None or not part.eager(ev.statement):
        return False
    at, loop_at = part.order.get(id(ev.statement), -1), part.order.get(id(part.loop), -1)
    return any(type(s) is cst.If and at < part.order.get(id(s), -1) < loop_at
               and any(type(r) is cst.Return for r in simple_statements(s.body))
               for s in simple_statements(ev.function.node.body))


def runs_graph_op(program: "Analysed", fn: "FunctionInfo") -> bool:
    """``fn`` (of ``program``'s module) runs a tensor operation (arithmetic on a tensor, a call that
    makes one): a frame without one has no graph, and Dynamo skips it without guarding (measured on
    torch 2.13: a helper that only asserts on a number, or returns it, does not recompile)."""
    return any(e.function is fn and (
        isinstance(e, ArithmeticEvent) and any(o.is_tensor for o in e.operands)
        or isinstance(e, CallEvent) and e.result is not None and e.result.is_tensor) for e in program.events)


def guardless_functions(program: "Program", breaks: "Breaks", calls: "Iterable[CallEvent]",
                        contexts: "Iterable[ContextManagerEvent]" = ()) -> set[int]:
    """``id`` of the functions that only ever run as frames of their own (handed to ``torch.compile`` and not
    called in the checked code, or called from the part of a function Dynamo runs eagerly or from a frame
    resumed after a break that Dynamo skips, :meth:`~dynalint.analysis.breaks.Breaks.in_skipped_frame`) and
    run no tensor operation nor break: Dynamo skips such a frame ("No ops traced for the FX graph") and guards
    on nothing it reads (measured on torch 2.13: a method that appends to ``self.beams``, called from a loop
    whose body breaks, never recompiles; a meter's ``update`` that breaks at ``self.total += float(value) *
    n`` is guarded on ``self.total`` even so).  A library's entry points may be called from compiled code
    elsewhere.  ``contexts``: the ``with`` statements, which call their object's ``__enter__`` and
    ``__exit__`` (from code Dynamo runs eagerly, where it cannot enter the object: measured on torch 2.13, a
    ``__enter__`` that counts its uses in ``self.n`` then recompiles nothing)."""
    compiled = program.entry_points.entered
    callers: dict[int, list[Event]] = {}
    for ev in calls:
        if ev.callee is not None:
            callers.setdefault(id(ev.callee), []).append(ev)
    for cm in contexts:
        cls = cm.value.cls if cm.value is not None else None
        for method in (cls.find_method("__enter__"), cls.find_method("__exit__")) if cls is not None else ():
            if method is not None:
                callers.setdefault(id(method), []).append(cm)
    broke = {id(b.event.function) for b in breaks.all}
    out: set[int] = set()
    for fn in program.compiled:
        found = callers.get(id(fn), [])
        own_frame = id(fn) in compiled and not found \
            or found and all(runs_eagerly(breaks, c) or breaks.in_skipped_frame(c) for c in found)
        if own_frame and id(fn) not in broke and not runs_graph_op(program, fn):
            out.add(id(fn))
    return out


class FrameGraphs:
    """Whether a function of the project, run as a frame of its own, has a graph for Dynamo to compile
    (and so guards on what it reads): it runs a tensor operation (:func:`runs_graph_op`) or breaks
    (the part before the break is compiled, measured on torch 2.13: ``logger.info("%s", p[1])`` in
    the helper guards on ``p[1]``).  The breaks of another module are found once, when first asked."""

    def __init__(self, program: "Program", breaks: "Breaks", settings: "Settings") -> None:
        self._program = program
        self._settings = settings
        self._breaks: dict[int, Breaks] = {id(program): breaks}

    def has_graph(self, fn: "FunctionInfo") -> bool:
        owner = self._program.program_for(fn.owner)
        return runs_graph_op(owner, fn) or any(b.event.function is fn for b in self.breaks_of(fn))

    def breaks_of(self, fn: "FunctionInfo") -> "Breaks":
        """The graph breaks of the module that defines ``fn``."""
        owner = self._program.program_for(fn.owner)
        found = self._breaks.get(id(owner))
        if found is None:
            same = (owner.settings or self._settings) == self._settings
            found = self._breaks[id(owner)] = find_breaks(owner, self._settings,
                                                          owner.break_classifier() if same else None)
        return found

    def eager(self, fn: "FunctionInfo", node: cst.CSTNode) -> bool:
        """``node`` of ``fn`` lies in the part of ``fn`` that Dynamo runs eagerly (:func:`eager_part`)."""
        part = eager_part(self.breaks_of(fn), fn)
        return part is not None and part.eager(node)
