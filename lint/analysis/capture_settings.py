"""The capture flags a module's own code turns on for the code it compiles.

``torch._dynamo.config.capture_scalar_outputs`` and ``capture_dynamic_output_shape_ops`` keep
``.item()``, ``nonzero()``, boolean masks... in the graph (``allow_rnn``, read the same way, makes Dynamo
trace ``nn.LSTM``/``GRU``/``RNN`` modules).  Dynamo reads them when it traces a frame,
at the first call of the compiled code (and at each recompile), not when ``torch.compile`` runs.
Measured on torch 2.13 (``f`` calls ``.item()``; 0 means no break):

==========================================================================  =====
form                                                                         breaks
==========================================================================  =====
none                                                                         1
``torch._dynamo.config.capture_scalar_outputs = True`` before the compile   0
the same assignment after ``torch.compile`` but before the first call        0
the same assignment inside ``main()``, before the compile there              0
``True`` then ``False`` before the first call                                1
``c = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(f))``  0
``@torch._dynamo.config.patch(...)`` right above or right below ``@torch.compile``  0
``with torch._dynamo.config.patch(...):`` around the compile call only      1
``with patch(...)`` / ``@patch(...)`` around the calls of the compiled code  0
``torch.compile(f, backend="eager", options={"capture_scalar_outputs": True})``  1
``torch.compile(f, options={...})`` (inductor)                               RuntimeError: unexpected option
==========================================================================  =====

So a flag is taken as on where the code provably traces under it:

* everywhere in the module, for an unconditional ``torch._dynamo.config.F = True`` among the
  module's top-level statements when no statement before it calls code of the module (the module's
  functions are traced only when called, after the import ran it);
* for a compile call, or a ``def`` decorated with ``@torch.compile``, that comes after such an
  assignment in the same block (a function's body, an ``if __name__ == "__main__":`` block) or in a
  block nested in a later statement of it;
* for a compile call wrapped by ``torch._dynamo.config.patch(F=True)(...)``, and a ``def`` whose
  ``@torch.compile`` has ``@torch._dynamo.config.patch(F=True)`` right above or below it;
* for ``c = torch.compile(...)`` when every use of ``c`` in the module that may see that binding is a
  call ``c(...)`` inside a ``with torch._dynamo.config.patch(F=True):`` block or a function decorated
  ``@torch._dynamo.config.patch(F=True)`` (not in a lambda there), and nothing else binds ``c`` there.

A compile site covers the functions it reaches through analysed calls, unless another compile site
of the module reaches them without the flag.  Not claimed: a patch around the compile call only,
``options=`` (no effect), a flag set in another module, and any flag the module also turns off
(assigned anything but ``True``, or patched so).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Iterator, Mapping, Protocol

import libcst as cst

from dynalint.analysis.events import CallEvent, Event
from dynalint.analysis.syntax import decorator_target, walk

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import FunctionInfo, ModuleIndex
    from dynalint.analysis.interface import EntryPointsView

CAPTURE_SCALAR_OUTPUTS = "capture_scalar_outputs"
CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS = "capture_dynamic_output_shape_ops"
#: the Dynamo flags that keep data-dependent work in the graph (``torch._dynamo.config``)
CAPTURE_FLAGS = (CAPTURE_SCALAR_OUTPUTS, CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS)
ALLOW_RNN = "allow_rnn"
#: the flags read where the module's code sets them: the capture flags, and ``allow_rnn`` (Dynamo then
#: traces ``nn.LSTM``/``GRU``/``RNN`` modules instead of breaking at their call)
SETTING_FLAGS = (*CAPTURE_FLAGS, ALLOW_RNN)

_CONFIG = "torch._dynamo.config"
PATCH_FUNCTION = f"{_CONFIG}.patch"
COMPILE_FUNCTIONS = frozenset({"torch.compile", "torch.compiler.compile"})


@dataclass(frozen=True)
class OwnCapture:
    """The capture flags the module turns on, and for which of its functions."""

    everywhere: frozenset[str] = frozenset()
    """On for all the module's code (a top-level assignment that runs before any of it is traced)."""
    functions: Mapping[int, frozenset[str]] = field(default_factory=dict)
    """``id`` of a function -> the flags on for it (those of the compile sites that reach it)."""

    def on(self, flag: str, fn: "FunctionInfo | None") -> bool:
        """Whether Dynamo traces ``fn`` with ``flag`` on, as the module's own code sets it."""
        return flag in self.everywhere or (fn is not None and flag in self.functions.get(id(fn), ()))

    def __bool__(self) -> bool:
        return bool(self.everywhere or self.functions)


NO_CAPTURE = OwnCapture()


@dataclass
class CaptureSites:
    """What the module's text says about the flags (read once per module, before the analysis)."""

    everywhere: frozenset[str] = frozenset()
    sites: dict[int, frozenset[str]] = field(default_factory=dict)
    """``id`` of a compile call, or of the node of a ``@torch.compile`` function -> the flags on where
    Dynamo traces what it compiles."""

    @property
    def own(self) -> OwnCapture:
        return OwnCapture(self.everywhere) if self.everywhere else NO_CAPTURE


def capture_sites(index: "ModuleIndex") -> CaptureSites:
    """The flags the module's text turns on: everywhere, and per compile site (see the module doc)."""
    if index.source is not None and not any(flag in index.source for flag in SETTING_FLAGS):
        return CaptureSites()
    scan = _Scan(index)
    scan.block(index.module.body, _Where(), top=True)
    if not scan.seen:
        return CaptureSites()
    scan.finish()
    off = scan.off
    sites = {k: v - off for k, v in scan.sites.items() if v - off}
    return CaptureSites(scan.everywhere - off, sites)


def own_capture(sites: CaptureSites, program: "Compiles", events: Iterable[Event]) -> OwnCapture:
    """The flags on for each function of the analysed module: those of the compile sites that reach it
    (through the calls the analysis found), unless a compile site without the flag reaches it too."""
    if not sites.sites:
        return sites.own
    edges = call_edges(events)
    covered: dict[int, set[str]] = {}
    uncovered: dict[str, set[int]] = {flag: set() for flag in SETTING_FLAGS}
    for key, fn in compiled_sites(program):
        flags = sites.sites.get(key, frozenset())
        reached = reach(edges, fn)
        for flag in SETTING_FLAGS:
            if flag in flags:
                for f in reached:
                    covered.setdefault(f, set()).add(flag)
            else:
                uncovered[flag] |= reached
    functions = {f: frozenset(flag for flag in flags if f not in uncovered[flag])
                 for f, flags in covered.items()}
    return OwnCapture(sites.everywhere, {f: flags for f, flags in functions.items() if flags})


class Compiles(Protocol):
    """What :func:`own_capture` asks of the analysis (a ``Program``)."""

    index: "ModuleIndex"
    entry_points: "EntryPointsView"


def compiled_sites(program: Compiles) -> Iterator[tuple[int, "FunctionInfo"]]:
    """(key, compiled function) of each compile site of the module: ``torch.compile(f)`` calls (key: the
    call's ``id``) and ``@torch.compile`` functions (key: the ``id`` of their node)."""
    index = program.index
    for call, where in index.compile_targets:
        if index.resolve_expr(call.func) not in COMPILE_FUNCTIONS:
            continue
        target = program.entry_points.compile_target(call, where)
        if target is not None and target[0].owner is index:
            yield id(call), target[0]
    for fn in index.all_functions:
        if fn.compile_decorated:
            yield id(fn.node), fn


def call_edges(events: Iterable[Event]) -> dict[int, set[int]]:
    """``id`` of a function -> ``id`` of the functions of the module its analysed calls run (a module's
    ``forward`` for a call of the module)."""
    edges: dict[int, set[int]] = {}
    for ev in events:
        if not isinstance(ev, CallEvent):
            continue
        callees = [ev.callee]
        if ev.callee is None and ev.module is not None:
            # a module, or one of a few (``layer`` over a list of two module classes): each one's forward
            callees = [m.cls.find_method("forward") for m in ev.module.alternatives if m.cls is not None]
        for callee in callees:
            if callee is not None:
                edges.setdefault(id(ev.function), set()).add(id(callee))
    return edges


def reach(edges: Mapping[int, set[int]], fn: "FunctionInfo") -> set[int]:
    """Ids of ``fn`` and of the functions its calls reach, through ``edges``."""
    seen = {id(fn)}
    todo = [id(fn)]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


@dataclass(frozen=True)
class _Where:
    """Where the scan is: the flags an earlier statement turned on, the flags a ``with`` patch or a
    ``@patch`` of the enclosing function holds while this code runs, and the enclosing functions."""

    active: frozenset[str] = frozenset()
    patched: frozenset[str] = frozenset()
    path: tuple[int, ...] = ()


@dataclass
class _Binding:
    """A compile call's result bound to a name: ``c = torch.compile(f)``."""

    name: str
    path: tuple[int, ...]
    order: int


@dataclass
class _Use:
    """A use of a name: called (with the flags patched around the call) or not."""

    path: tuple[int, ...]
    order: int
    called: bool
    patched: frozenset[str]


class _Scan:
    """One pass over the module's statements: the flags assigned, patched and turned off, and the uses
    of the names compile results are bound to."""

    def __init__(self, index: "ModuleIndex") -> None:
        self.index = index
        self.compile_calls = {id(call) for call, _ in index.compile_targets}
        self.everywhere: frozenset[str] = frozenset()
        self.sites: dict[int, frozenset[str]] = {}
        self.off: set[str] = set()
        self.seen = False
        """Whether the module names a flag at all."""
        self._quiet = True
        """No top-level statement so far calls code of the module."""
        self._order = 0
        self.bound: dict[int, _Binding] = {}
        """``id`` of a compile call -> the name its result is bound to."""
        self.uses: dict[str, list[_Use]] = {}
        self.bindings: dict[str, list[_Use]] = {}

    def block(self, body: Iterable[cst.CSTNode], where: _Where, top: bool = False) -> None:
        """The statements of one block."""
        for stmt in body:
            self._order += 1
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self.expression_parts(small, where)
                turned = self.turned_on(stmt)
                if turned and top and self._quiet:
                    self.everywhere |= turned
                where = _Where(where.active | turned, where.patched, where.path)
            elif isinstance(stmt, cst.FunctionDef):
                self.note_binding(stmt.name.value, where)
                patched = self.function(stmt, where)
                self.block(stmt.body.body, _Where(where.active, patched, (*where.path, id(stmt))))
            elif isinstance(stmt, cst.ClassDef):
                self.note_binding(stmt.name.value, where)
                for deco in stmt.decorators:
                    self.expression_parts(deco, where)
                self.block(stmt.body.body, where)
            else:
                patched = where.patched
                for part in _headers(stmt):
                    if isinstance(part, cst.WithItem):
                        self.expression_parts(part.item, where)
                        patched |= self.patched(part.item)
                        if part.asname is not None:
                            self.note_targets(part.asname.name, where)
                    else:
                        self.expression_parts(part, where)
                if isinstance(stmt, cst.For):
                    self.note_targets(stmt.target, where)
                inner_where = _Where(where.active, patched if isinstance(stmt, cst.With) else where.patched,
                                     where.path)
                for inner in _blocks(stmt):
                    self.block(inner, inner_where)
            if top and self._quiet and not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) \
                    and self.runs_module_code(stmt):
                self._quiet = False

    def function(self, node: cst.FunctionDef, where: _Where) -> frozenset[str]:
        """A ``def``: its decorators, and the flags of a ``@torch.compile`` among them; returns the flags
        its ``@torch._dynamo.config.patch(...)`` decorators hold while it runs."""
        decorators = list(node.decorators)
        held: set[str] = set()
        for deco in decorators:
            self.expression_parts(deco, where)
            held |= self.patched(deco.decorator)
        for i, deco in enumerate(decorators):
            if self.index.resolve_expr(decorator_target(deco)) in COMPILE_FUNCTIONS:
                flags = set(where.active)
                for j in (i - 1, i + 1):
                    if 0 <= j < len(decorators):
                        flags |= self.patched(decorators[j].decorator)
                if flags:
                    self.sites[id(node)] = frozenset(flags)
        return frozenset(held)

    def expression_parts(self, node: cst.CSTNode, where: _Where) -> None:
        """Compile calls (with the flags on there, and a patch wrapped around them), flags turned off,
        and the uses of names."""
        later = {id(n) for lam in walk(node) if isinstance(lam, cst.Lambda) for n in walk(lam.body)}
        """Code in a lambda runs when the lambda is called, maybe outside the patch around it."""
        not_loads: set[int] = set()
        for n in walk(node):
            if isinstance(n, cst.Assign):
                for t in n.targets:
                    flag = self.flag_of(t.target)
                    if flag is not None and not _is_true(n.value):
                        self.off.add(flag)
                    not_loads |= self.note_targets(t.target, where)
                if len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name) \
                        and id(n.value) in self.compile_calls:
                    self.bound[id(n.value)] = _Binding(n.targets[0].target.value, where.path, self._order)
            elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
                flag = self.flag_of(n.target)
                if flag is not None and not (isinstance(n, cst.AnnAssign) and n.value is not None
                                             and _is_true(n.value)):
                    self.off.add(flag)
                not_loads |= self.note_targets(n.target, where)
            elif isinstance(n, (cst.Attribute, cst.Arg, cst.CompFor)):
                name = n.attr if isinstance(n, cst.Attribute) else \
                    n.keyword if isinstance(n, cst.Arg) else n.target
                if isinstance(name, cst.Name):
                    not_loads.add(id(name))
                if isinstance(n, cst.CompFor):
                    not_loads |= self.note_targets(n.target, where)
            elif isinstance(n, cst.Call):
                if id(n) in self.compile_calls and where.active:
                    self.sites[id(n)] = self.sites.get(id(n), frozenset()) | where.active
                wrapped = n.args[0].value if len(n.args) == 1 else None
                if isinstance(n.func, cst.Call) and id(wrapped) in self.compile_calls:
                    flags = self.patched(n.func)
                    if flags:
                        key = id(wrapped)
                        self.sites[key] = self.sites.get(key, frozenset()) | flags
                elif self.index.resolve_expr(n.func) == PATCH_FUNCTION:
                    self.patched(n)
                if isinstance(n.func, cst.Name):
                    not_loads.add(id(n.func))
                    patched = frozenset() if id(n) in later else where.patched
                    use = _Use(where.path, self._order, True, patched)
                    self.uses.setdefault(n.func.value, []).append(use)
            elif isinstance(n, cst.Name) and id(n) not in not_loads:
                self.uses.setdefault(n.value, []).append(_Use(where.path, self._order, False, frozenset()))

    def note_targets(self, target: cst.CSTNode, where: _Where) -> set[int]:
        """Record the names an assignment target binds (``a``, ``a, *b``; not ``x.a`` or ``x[i]``, which
        read ``x``); the ids of those ``Name`` nodes."""
        if isinstance(target, cst.Name):
            self.note_binding(target.value, where)
            return {id(target)}
        if isinstance(target, (cst.Tuple, cst.List)):
            return {i for el in target.elements for i in self.note_targets(el.value, where)}
        if isinstance(target, cst.StarredElement):
            return self.note_targets(target.value, where)
        return set()

    def note_binding(self, name: str, where: _Where) -> None:
        self.bindings.setdefault(name, []).append(_Use(where.path, self._order, False, frozenset()))

    def called_under(self, binding: _Binding) -> frozenset[str]:
        """The flags a patch holds around every call of a name bound to a compile result: every use of
        the name in the file that may see the binding (in another function, or later in the same one) is
        a call inside a ``with torch._dynamo.config.patch(...)`` block or a function decorated with one,
        and nothing else binds the name there."""
        def after(u: _Use) -> bool:
            return u.path != binding.path or u.order > binding.order

        if any(after(b) and b.order != binding.order for b in self.bindings.get(binding.name, [])):
            return frozenset()
        uses = [u for u in self.uses.get(binding.name, []) if after(u)]
        if not uses or not all(u.called for u in uses):
            return frozenset()
        flags = set(SETTING_FLAGS)
        for u in uses:
            flags &= u.patched
        return frozenset(flags)

    def finish(self) -> None:
        """Add the flags patched around the calls of the compile results bound to names."""
        for key, binding in self.bound.items():
            flags = self.called_under(binding)
            if flags:
                self.sites[key] = self.sites.get(key, frozenset()) | flags

    def turned_on(self, stmt: cst.SimpleStatementLine) -> frozenset[str]:
        """The flags a line assigns ``True``: ``torch._dynamo.config.F = True``."""
        out = set()
        for small in stmt.body:
            if isinstance(small, cst.Assign) and _is_true(small.value):
                out.update(f for t in small.targets if (f := self.flag_of(t.target)) is not None)
        return frozenset(out)

    def flag_of(self, target: cst.CSTNode) -> str | None:
        """``F`` when ``target`` is ``torch._dynamo.config.F`` for a capture flag ``F``."""
        if isinstance(target, cst.Attribute) and target.attr.value in SETTING_FLAGS:
            self.seen = True
            if self.index.resolve_expr(target.value) == _CONFIG:
                return target.attr.value
        return None

    def patched(self, expr: cst.BaseExpression) -> frozenset[str]:
        """The flags ``torch._dynamo.config.patch(...)`` turns on (``F=True``, ``("F", True)``,
        ``({"F": True})``); a flag it sets to anything else is noted as turned off, and one it may set
        (``**kwargs``) too."""
        if not (isinstance(expr, cst.Call) and self.index.resolve_expr(expr.func) == PATCH_FUNCTION):
            return frozenset()
        pairs: list[tuple[str, cst.BaseExpression]] = []
        args = list(expr.args)
        if any(a.star for a in args):
            self.off.update(SETTING_FLAGS)
            return frozenset()
        positional = [a.value for a in args if a.keyword is None]
        if len(positional) == 2 and isinstance(positional[0], cst.SimpleString):
            name = positional[0].evaluated_value
            if isinstance(name, str):
                pairs.append((name, positional[1]))
        elif len(positional) == 1 and isinstance(positional[0], cst.Dict):
            for el in positional[0].elements:
                if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString) \
                        and isinstance(el.key.evaluated_value, str):
                    pairs.append((el.key.evaluated_value, el.value))
                elif not isinstance(el, cst.DictElement):
                    self.off.update(SETTING_FLAGS)  # `{**other}`
        pairs += [(a.keyword.value, a.value) for a in args if a.keyword is not None]
        on = set()
        for name, value in pairs:
            if name in SETTING_FLAGS:
                self.seen = True
                if _is_true(value):
                    on.add(name)
                else:
                    self.off.add(name)
        return frozenset(on)

    def runs_module_code(self, stmt: cst.CSTNode) -> bool:
        """Whether a top-level statement may run code of the module (and so trace it): it calls a name
        the module binds (a function, a compiled object, a method of an object it made), or calls what
        a call returned (``torch.compile(f)(x)``)."""
        index = self.index
        for n in walk(stmt):
            if not isinstance(n, cst.Call):
                continue
            if isinstance(n.func, cst.Call):
                return True
            func = n.func
            while isinstance(func, cst.Attribute):
                func = func.value
            if isinstance(func, cst.Name) and (func.value in index.functions or func.value in index.globals) \
                    and func.value not in index.imports:
                return True
        return False


def _headers(stmt: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The expressions a compound statement evaluates itself (an ``if`` test, a ``with`` item...)."""
    if isinstance(stmt, (cst.If, cst.While)):
        yield stmt.test
    elif isinstance(stmt, cst.For):
        yield stmt.iter
    elif isinstance(stmt, cst.With):
        yield from stmt.items
    elif isinstance(stmt, cst.Try):
        yield from (h.type for h in stmt.handlers if h.type is not None)


def _blocks(stmt: cst.CSTNode) -> Iterator[list[cst.CSTNode]]:
    """The blocks of a compound statement (an ``elif`` is a block holding one ``if``)."""
    for name in ("body", "orelse", "finalbody"):
        part = getattr(stmt, name, None)
        if isinstance(part, cst.If):
            yield [part]
        elif isinstance(part, (cst.Else, cst.Finally)):
            yield list(part.body.body)
        elif isinstance(part, cst.BaseSuite):
            yield list(part.body)
    for handler in getattr(stmt, "handlers", ()):
        yield list(handler.body.body)
    for case in getattr(stmt, "cases", ()):
        yield list(case.body.body)


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"
