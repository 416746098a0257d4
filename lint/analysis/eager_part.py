"""The part of a function that Dynamo runs eagerly because of a graph break it cannot resume from.

Dynamo traces a frame until its first break.  A break outside any loop ends a graph and the rest of
the function is a resumed frame, traced the same way; a break inside a loop cannot be resumed from, so
Dynamo gives up on the whole frame it is tracing and runs it eagerly (measured on torch 2.13: "Failed
to handle graph break gracefully. Skipping the function and falling back to eager").  Nor can it
resume after a break inside a ``try`` statement, or one at the context manager a ``with`` statement
enters (``with open(...)``), but there it compiles the graph before the break and runs the rest
eagerly; a break inside the body of a ``with torch.no_grad():`` is resumed from (measured).

One notion for both kinds of findings: nothing in the eager part breaks, since Dynamo never traces it
(:func:`split_untraced`), and nothing it reads is guarded (the recompile rules ask :func:`eager_part`).
The functions it calls are compiled as frames of their own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Protocol, TypeVar

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.events import CallEvent
from dynalint.core.gb_types import EXPLICIT_BREAK, LOOP, RNN_MODULE, GraphBreakType
from dynalint.analysis.logging_calls import LOGGING_FUNCTIONS, is_logger_call
from dynalint.analysis.syntax import Spans, encloses, simple_statements, walk

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.events import Event
    from dynalint.analysis.module_index import FunctionInfo


class _Break(Protocol):
    """What the eager part reads of a graph break (a ``breaks.Break``, which imports this module)."""

    @property
    def event(self) -> "Event": ...

    @property
    def node(self) -> cst.CSTNode: ...

    @property
    def statement(self) -> cst.CSTNode: ...

    @property
    def in_loop(self) -> bool: ...

    @property
    def gb(self) -> GraphBreakType: ...


B = TypeVar("B", bound=_Break)


@dataclass(frozen=True)
class EagerPart:
    """Where a function starts to run eagerly: after the statement at ``start`` (``-1``: from its
    first statement), to its end."""

    order: dict[int, int]
    """Node id -> its position in a walk of the function's body (nested scopes not entered)."""
    start: int
    loop: cst.CSTNode
    """The first loop, ``try`` or ``with`` statement of the function with a break Dynamo cannot resume
    from."""

    def eager(self, node: cst.CSTNode) -> bool:
        """``node`` (a statement of the function) runs eagerly."""
        return self.order.get(id(node), -1) > self.start


def eager_part(breaks: Iterable[_Break], fn: "FunctionInfo") -> EagerPart | None:
    """The part of ``fn`` that Dynamo runs eagerly because of a graph break it
    cannot resume from; None when ``fn`` has no such break.

    The eager part starts after the last resumable break that comes before the first loop with a break
    (at the function's start when there is none), or at the ``try``/``with`` statement whose break
    comes first: the graph before that break is compiled (and guarded)."""
    mine = [b for b in breaks if b.event.function is fn]
    if not mine:
        return None  # (without a walk of the function)
    looped = [(b, block) for b in mine for block in function_blocks(fn) if _unresumable(b, block, fn)]
    skipping = [b for b in mine if skips_frame(b)]
    if skipping:
        # (one in a branch: the calls that do not take it are compiled, and guarded on what they read)
        top = {id(s) for s in simple_statements(fn.node.body)}
        looped += [(b, b.statement) for b in skipping if id(b.statement) in top]
    if not looped:
        return None
    order = body_order(fn)
    first = min((block for _, block in looped), key=lambda block: order.get(id(block), -1))
    in_loops = {id(b) for b, _ in looped}
    before = [b for b in mine if id(b) not in in_loops and order.get(id(b.statement), -1) < order.get(id(first), -1)]
    last = max(before, key=lambda b: order.get(id(b.statement), -1), default=None)
    start = -1
    if last is not None:  # the frame resumed after that break begins past its statement (or its header)
        ends = last.statement if isinstance(last.statement, (cst.SimpleStatementLine, cst.BaseSmallStatement)) \
            else last.node
        start = max(order.get(id(n), -1) for n in (last.statement, *walk(ends, into_scopes=False)))
        # (the statement itself counts: the node of a ``class`` statement's break, its name, lies in the
        # scope the statement opens, which the walk does not enter)
    if isinstance(first, (cst.With, cst.Try)):
        start = order.get(id(first), 0) - 1  # the graph before such a break is compiled (and guarded)
    return EagerPart(order, start, first)


class AtEvent:
    """Where a break is, read from its event: the node, the statement, whether it is in a loop (inside one,
    Dynamo gives up on the whole function and runs it eagerly)."""

    event: "Event"

    @property
    def node(self) -> cst.CSTNode:
        return self.event.node

    @property
    def statement(self) -> cst.CSTNode:
        return self.event.statement

    @property
    def in_loop(self) -> bool:
        return self.event.in_loop


@dataclass(frozen=True)
class CallBreak(AtEvent):
    """A call whose callee breaks the graph (:attr:`CallEvent.callee_broke`), as a break of the caller at the
    call: Dynamo inlines the callee, and a break inside it breaks the caller's frame there (measured on torch
    2.13: a ``requires_grad_`` in a helper called in a loop makes Dynamo skip the loop's frame, "graph break
    in loop", and guard none of its arguments)."""

    event: CallEvent
    gb: "GraphBreakType | None" = None


def breaking_calls(events: "Iterable[Event]", fn: "FunctionInfo") -> list[CallBreak]:
    """The calls of ``fn`` whose callee breaks the graph, as breaks of ``fn`` (:class:`CallBreak`)."""
    return [CallBreak(ev) for ev in events
            if isinstance(ev, CallEvent) and ev.callee_broke and ev.function is fn]


def resumable(brk: _Break) -> bool:
    """Dynamo resumes after ``brk`` in a frame of its own, handed what is live there: a break outside any
    loop, ``try`` body and the context managers a ``with`` statement enters (after those, it runs the rest
    of the frame eagerly)."""
    fn = brk.event.function
    return not any(_unresumable(brk, block, fn) for block in function_blocks(fn))


def in_own_loop(ev: "Event") -> bool:
    """``ev`` is inside a loop of its own function (:attr:`Event.in_loop` also counts the loop of a caller
    that the call was analysed in).  A break there leaves that caller to run eagerly, and the function,
    called from eager code, is a frame of its own: what follows a break of it is compiled, unless a loop
    of its own holds that break (measured on torch 2.13: a sampler that takes ``float(...)`` of its input,
    called in a generation loop, is resumed after the break and recompiles on ``___stack0 == ...``)."""
    return ev.in_loop and ev.function is not None and any(
        type(b) in (cst.For, cst.While) and encloses(b, ev.node) for b in function_blocks(ev.function))


def function_blocks(fn: "FunctionInfo") -> list[cst.CSTNode]:
    """The loops, ``try`` and ``with`` statements of ``fn``'s body (nested scopes not entered), found once
    per definition (:meth:`FunctionInfo.derived`)."""
    return fn.derived("blocks", _blocks)


_BLOCK_TYPES = frozenset({cst.For, cst.While, cst.With, cst.Try, cst.GeneratorExp})
"""(libcst's node classes are not subclassed: a type test is enough, where ``isinstance`` asks libcst's
abstract base classes about each node of the function that is none of them.)"""


def _blocks(node: cst.FunctionDef) -> list[cst.CSTNode]:
    """What :func:`function_blocks` finds, of the definition ``node``."""
    return [n for n in walk(node.body, into_scopes=False) if type(n) in _BLOCK_TYPES]


#: torch's decorators that run the function they decorate inside a wrapper function of their own (a context
#: manager's ``__call__``)
_WRAPPING_TORCH_DECORATORS = frozenset({
    "torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.set_grad_enabled", "torch.autocast",
    "torch.amp.autocast", "torch.autograd.no_grad", "torch.autograd.enable_grad",
    "torch.autograd.inference_mode",
})


def runs_in_wrapper(fn: "FunctionInfo") -> bool:
    """Compiling ``fn`` compiles a wrapper that calls it: a decorator below any compile decorator is one of
    torch's context managers (``@torch.no_grad()``) or a function of the checked module that returns a
    function it defines.  Dynamo inlines ``fn`` into the wrapper's frame, so a break ``fn`` cannot resume from
    leaves the wrapper's guards on what ``fn`` read before it (measured on torch 2.13: with a ``print`` in a
    loop, ``kwargs['guidance'] == 0.0`` recompiles ``inner`` for ``@torch.no_grad()`` and a
    ``functools.wraps`` wrapper for a decorator of the file; the bare function runs eagerly and never
    recompiles)."""
    decorators = fn.decorators
    from dynalint.analysis.module_index import COMPILE_NAMES

    compiled = [i for i, d in enumerate(decorators) if d in COMPILE_NAMES]
    below = decorators[compiled[-1] + 1:] if compiled else decorators
    own = fn.owner.functions if fn.owner is not None else {}
    return any(d in _WRAPPING_TORCH_DECORATORS or (d in own and _returns_own_function(own[d])) for d in below)


def _returns_own_function(deco: "FunctionInfo") -> bool:
    """``deco`` returns a function it defines (``def wrapper(*a, **k): ...; return wrapper``)."""
    nodes = list(walk(deco.node.body, into_scopes=False))
    defined = {n.name.value for n in nodes if isinstance(n, cst.FunctionDef)}
    return any(isinstance(n, cst.Return) and isinstance(n.value, cst.Name) and n.value.value in defined
               for n in nodes)


def read_before_first_break(fn: "FunctionInfo", name: str, breaks: Iterable[_Break]) -> bool:
    """``fn`` mentions ``name`` before its first graph break, in the order of its body."""
    order = body_order(fn)
    first = min((order.get(id(b.node), -1) for b in breaks if b.event.function is fn), default=None)
    return first is not None and any(
        isinstance(n, cst.Name) and n.value == name and order.get(id(n), -1) < first
        for n in walk(fn.node.body, into_scopes=False))


def body_order(fn: "FunctionInfo") -> dict[int, int]:
    """Node id -> its position in a walk of ``fn``'s body (nested scopes not entered), made once per
    definition (:meth:`FunctionInfo.derived`)."""
    return fn.derived("body order", _body_order)


def returns_before_back_edge(fn: "FunctionInfo", loop_body: cst.CSTNode, statement: cst.CSTNode,
                             ends: dict[int, int]) -> bool:
    """Dynamo resumes inside the loop whose body is ``loop_body`` after a break at ``statement``, rather than
    giving up on the frame: in the code after the break it meets a ``return`` before a jump back (the end of
    the loop's body, a ``continue``), which its test for a loop (``maybe_has_backedge``) stops at (measured
    on torch 2.13: after ``if t.item() < tol: return x`` in a loop, a ``print`` later in the loop breaks;
    with a ``continue`` there instead, Dynamo runs the whole function eagerly).  ``ends``: the last position
    of each loop body asked about, by ``id``, kept by the caller."""
    order = body_order(fn)
    at = order.get(id(statement))
    if at is None:
        return False
    end = ends.get(id(loop_body))
    if end is None:
        end = ends[id(loop_body)] = max((order.get(id(n), -1) for n in walk(loop_body, into_scopes=False)),
                                        default=-1)
    for position, returns in fn.derived("exits", _exits):
        if position >= at:
            return returns and position <= end
    return False


def _exits(node: cst.FunctionDef) -> list[tuple[int, bool]]:
    """The positions of the ``return`` (True) and ``continue`` (False) statements of the definition ``node``,
    in order (as :func:`body_order` numbers them)."""
    return [(i, type(n) is cst.Return) for i, n in enumerate(walk(node.body, into_scopes=False))
            if type(n) in (cst.Return, cst.Continue)]


def _body_order(node: cst.FunctionDef) -> dict[int, int]:
    """Node id -> its position in a walk of the function's body (nested scopes not entered)."""
    return {id(n): i for i, n in enumerate(walk(node.body, into_scopes=False))}


def skips_frame(brk: _Break) -> bool:
    """``brk`` is one Dynamo does not resume after: it skips the frame that meets it and runs it eagerly
    ("Failed to handle graph break gracefully. Skipping the function", measured on torch 2.13 at a call of an
    ``nn.LSTM``/``GRU``/``RNN``), unless a method that visits every submodule meets the RNN inside torch's own
    frame and returns no generator (``model.train()``: the function resumes after it; ``model.parameters()``
    gives a generator, which Dynamo cannot rebuild to resume)."""
    if brk.gb is not RNN_MODULE:
        return False
    ev = brk.event
    return not (isinstance(ev, CallEvent) and ev.walks_rnn and ev.method not in K.GENERATING_MODULE_METHODS)


def _unresumable(brk: _Break, block: cst.CSTNode, fn: "FunctionInfo") -> bool:
    """``brk`` lies inside ``block`` where Dynamo cannot resume after it: in the body of a loop, of a
    ``try`` statement, in the context managers a ``with`` statement enters, or in a generator expression
    past its first iterable, which Dynamo cannot rebuild to resume ("Generator reconstruction with
    mutations", measured on torch 2.13) (``block``: of ``fn``)."""
    if isinstance(block, cst.With):
        return any(_encloses(fn, item, brk.node) for item in block.items)
    if isinstance(block, cst.GeneratorExp):
        return _encloses(fn, block, brk.node) and not _encloses(fn, block.for_in.iter, brk.node)
    if isinstance(block, cst.For) and brk.gb is LOOP and _encloses(fn, block.iter, brk.node):
        return True  # Dynamo cannot step what the loop iterates: "graph break in loop" at its header
    return (brk.in_loop or isinstance(block, cst.Try)) and _encloses(fn, block, brk.node)


def _encloses(fn: "FunctionInfo", outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    """:func:`encloses` for nodes of ``fn``'s body, answered by the :class:`Spans` of that body, made once
    per definition (a function with many breaks, loops and statements asks it of each pair: a walk each)."""
    return fn.derived("spans", _body_spans).encloses(outer, inner)


def _body_spans(node: cst.FunctionDef) -> Spans:
    """What :func:`_encloses` reads, of the definition ``node``."""
    return Spans(node.body)


def split_untraced(found: list[B]) -> tuple[list[B], list[B]]:
    """``found`` (breaks in evaluation order) split into those Dynamo meets and those in the eager part
    of their function, which it never traces (measured on torch 2.13: a ``.nonzero()``, a ``print`` or
    an ``open()`` after a loop whose body breaks, after a ``try`` whose body breaks or after
    ``with open(...)`` are not reported, nor is a ``finally`` block or the body of that ``with``).
    Met: the breaks of the first unresumable statement on Dynamo's way there, its header included,
    except those after one of its unresumable breaks in the same block (tracing has stopped there); and
    in the eager part, those of its comprehensions, of its logging calls given a tensor and of the methods
    that call ``torch._dynamo.graph_break()`` themselves, which run as frames of their own that Dynamo
    compiles.
    A break is left out only where every run that reaches it passed that statement's break first: not
    after a loop whose break sits in a branch, nor after an ``if`` whose branch holds that statement
    (measured: with the branch not taken, a ``print`` after it breaks)."""
    functions: dict[int, list[B]] = {}
    for b in found:
        functions.setdefault(id(b.event.function), []).append(b)
    dropped: set[int] = set()
    for mine in functions.values():
        fn = mine[0].event.function
        part = eager_part(mine, fn)
        if part is None:
            continue
        block = part.loop
        paths: _Paths = {}  # (the breaks of a function are compared pair by pair, each asking for both paths)
        stops = [b for b in mine if _unresumable(b, block, fn)]
        surely = any(_surely_reached(fn, paths, block, s.node) for s in stops)
        for b in mine:
            if not part.eager(b.statement) or _own_frame(b, fn) or _logs_tensor(b) \
                    or breaks_inside_method(b):
                continue
            if _met_in(block, b, fn):
                if any(s is not b and (_dominates(fn, paths, s.node, b.node)
                                       or _stops_first(fn, paths, part, s, b)) for s in stops):
                    dropped.add(id(b))
            elif surely and (_encloses(fn, block, b.node) or _dominates(fn, paths, block, b.node)):
                dropped.add(id(b))
    if not dropped:
        return found, []
    return [b for b in found if id(b) not in dropped], [b for b in found if id(b) in dropped]


def _own_frame(brk: _Break, fn: "FunctionInfo") -> bool:
    """``brk`` is at or inside a comprehension, which the eager part runs as a frame of its own that
    Dynamo compiles (measured on torch 2.13: "Missing tp_iternext" at a comprehension over a local
    list after a loop whose body breaks)."""
    return any(isinstance(n, _COMPREHENSIONS) and _encloses(fn, n, brk.node)
               for n in walk(brk.statement, into_scopes=False))


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _logs_tensor(brk: _Break) -> bool:
    """``brk`` is at a logging call given a tensor (``logger.info("%s", t)``, ``logging.info(...)``): the
    logging functions are Python code that Dynamo compiles as a frame of its own when the eager part
    hands them a tensor, and the graph breaks inside, reported at the call (measured on torch 2.13: at
    ``isEnabledFor``; not for ``print(t)`` or ``warnings.warn``, nor without a tensor)."""
    ev = brk.event
    if not isinstance(ev, CallEvent):
        return False
    q = ev.qualname or ""
    logging_call = is_logger_call(ev) or (q.startswith("logging.") and q.count(".") == 1
                                          and q.split(".")[1] in LOGGING_FUNCTIONS)
    return logging_call and any(v is not None and v.is_tensor for v in (*ev.args, *ev.kwargs.values()))


def breaks_inside_method(brk: _Break) -> bool:
    """``brk`` is a ``torch._dynamo.graph_break()`` inside the code of the method called there
    (``optimizer.step()``): called from the eager part, the method is a frame of its own that Dynamo compiles,
    and the graph breaks inside it, reported at the call (measured on torch 2.13, after a loop whose body
    breaks; ``zero_grad()``, which Dynamo skips, and ``loss.backward()`` are not reported there).  Dynamo
    never compiles a frame of its own package, so ``torch._dynamo.graph_break()`` called there passes
    silently (measured)."""
    ev = brk.event
    return brk.gb is EXPLICIT_BREAK and isinstance(ev, CallEvent) and ev.method is not None \
        and not (ev.qualname or "").startswith("torch._dynamo.")


def _met_in(block: cst.CSTNode, brk: _Break, fn: "FunctionInfo") -> bool:
    """``brk`` is in the part of ``block`` that Dynamo traces until its first unresumable break: not
    the body of a ``with`` (its managers break first) nor the handlers, ``else`` or ``finally`` of a
    ``try`` (they run after the body)."""
    if isinstance(block, cst.With):
        return any(_encloses(fn, item, brk.node) for item in block.items)
    if isinstance(block, cst.Try):
        return _encloses(fn, block.body, brk.node)
    return _encloses(fn, block, brk.node)


def _stops_first(fn: "FunctionInfo", paths: _Paths, part: EagerPart, stop: _Break, brk: _Break) -> bool:
    """Tracing the first pass over the body of the loop ``part`` starts at stops at ``stop`` before it
    reaches ``brk``: ``stop`` is in that body (or the header of a ``for`` that cannot step what it iterates),
    before ``brk``, and surely reached there, a nested loop's body taken to run once (measured on torch 2.13:
    the ``if kl > 10: break`` after an inner loop whose body breaks is never traced)."""
    loop = part.loop
    return isinstance(loop, (cst.For, cst.While)) and (_encloses(fn, loop.body, stop.node) or (
        isinstance(loop, cst.For) and _encloses(fn, loop.iter, stop.node))) \
        and part.order.get(id(stop.statement), -1) < part.order.get(id(brk.statement), -1) \
        and _surely_reached(fn, paths, loop, stop.node)


#: how a block of a compound statement is entered whenever the statement runs: always (the body of a
#: ``with``, of a ``try``, its ``finally``), as a loop's body, or maybe (a branch, a handler, an ``else``)
_ALWAYS, _LOOP, _MAYBE = "always", "loop", "maybe"
_SUITES = (cst.IndentedBlock, cst.SimpleStatementSuite)


_Path = list[tuple[cst.CSTNode, int, str]]
_Paths = dict[int, tuple[cst.CSTNode, _Path]]
"""The paths found in one function by ``id`` of their node (:func:`_path`), kept while its breaks are
split (:func:`split_untraced`)."""


def _path(fn: "FunctionInfo", paths: _Paths, node: cst.CSTNode) -> _Path:
    """The blocks from ``fn``'s body down to the statement holding ``node``: each block, the position in
    it of the statement on the way, and how that block is entered (found once per node in ``paths``)."""
    known = paths.get(id(node))
    if known is None or known[0] is not node:
        known = paths[id(node)] = (node, _find_path(fn, node))
    return known[1]


def _find_path(fn: "FunctionInfo", node: cst.CSTNode) -> _Path:
    out: _Path = []
    suite: cst.CSTNode | None = fn.node.body
    entered = _ALWAYS
    while suite is not None:
        statements = simple_statements(suite)  # type: ignore[arg-type]
        at = next((i for i, s in enumerate(statements) if _encloses(fn, s, node)), None)
        if at is None:
            break
        out.append((suite, at, entered))
        stmt = statements[at]
        suite = next((n for n in walk(stmt, into_scopes=False) if n is not stmt and isinstance(n, _SUITES)
                      and _encloses(fn, n, node)), None)
        if suite is not None:
            entered = _entered(stmt, suite)
    return out


def _entered(stmt: cst.CSTNode, suite: cst.CSTNode) -> str:
    """How ``suite``, a block of the compound statement ``stmt``, is entered when ``stmt`` runs."""
    if isinstance(stmt, cst.With) and suite is stmt.body:
        return _ALWAYS
    if isinstance(stmt, cst.Try) and (suite is stmt.body or suite is getattr(stmt.finalbody, "body", None)):
        return _ALWAYS
    if isinstance(stmt, (cst.For, cst.While)) and suite is stmt.body:
        return _LOOP
    return _MAYBE


def dominates(fn: "FunctionInfo", first: cst.CSTNode, later: cst.CSTNode) -> bool:
    """Every run of ``fn`` that reaches the statement holding ``later`` ran the one holding ``first`` before."""
    return _dominates(fn, {}, first, later)


def _dominates(fn: "FunctionInfo", paths: _Paths, first: cst.CSTNode, later: cst.CSTNode) -> bool:
    """Every run that reaches the statement holding ``later`` ran the one holding ``first`` before: a
    later statement of a block that holds ``first``, always entered down to it (a ``with`` or ``try``
    body; not a branch or a loop, which may not run)."""
    outer, inner = _path(fn, paths, first), _path(fn, paths, later)
    for level, ((suite, at, _), (other, position, _)) in enumerate(zip(outer, inner)):
        if suite is not other:
            return False
        if position != at:
            return position > at and all(how == _ALWAYS for _, _, how in outer[level + 1:])
    if outer and len(inner) > len(outer):
        # `later` is inside the `if` whose test holds `first`: the test runs before either branch (not a
        # `while` test, whose unresumable break Dynamo meets after one pass over the body: see `breaks`)
        suite, at, _ = outer[-1]
        stmt = simple_statements(suite)[at]  # type: ignore[arg-type]
        return isinstance(stmt, cst.If) and _encloses(fn, stmt.test, first)
    return False


def _surely_reached(fn: "FunctionInfo", paths: _Paths, block: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Whenever ``block`` runs, so does the statement holding ``node`` inside it: in its header, or in
    blocks always entered from it (a loop's body counts, the body of a loop nested in it too: each is
    taken to run once; measured on torch 2.13: a break in the inner loop of ``for epoch in ...: for batch
    in ...:`` runs the whole function eagerly, the ``.item()`` after both loops included)."""
    path = _path(fn, paths, node)
    depth = len(_path(fn, paths, block))
    return all(how == _ALWAYS or how == _LOOP for level, (_, _, how) in enumerate(path) if level >= depth)
