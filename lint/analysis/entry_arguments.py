"""The Python values callers in the project pass to a module's compiled entry points.

Dynamo specialises a compiled function on its Python arguments, so distinct literals passed to one
parameter from code that is not compiled itself (a call from compiled code is inlined) are distinct
graphs.  Read from the module index's call sites: a module-level function by its name, a module's
``forward`` through the local names its callers bind to ``ClassName(...)``, and what
``torch.compile(...)`` returned by the name it is bound to; and from the calls in the modules that
import the entry point (:func:`~dynalint.analysis.number_callers.foreign_call_sites`).  A number
computed from the variable of the loop that makes the calls changes from one call to the next: a
``range`` of at least two, or a tuple or list of different numbers (written in the loop, or bound
once to a name).  Measured on torch 2.13 (``backend="eager"``): a number that changes recompiles
once and is then dynamic, and recompiles at every new value under ``dynamic=False``; ``None`` at one
call and a tensor at another, or a list and a tuple, compile one graph each; two list, tuple or dict
displays compile one graph each when their lengths (a dict's keys) differ, or a literal element the
function reads (``size[0]``, ``cfg["beta"]``, any when it uses the container otherwise than by
``len``): a tensor's value inside is not guarded, its count is; a number the compiled
code only passes on (binds, packs into a container, returns), and an argument it never reads,
installs no guard.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.eager_part import body_order
from dynalint.analysis.events import CallEvent, Event, SubscriptEvent
from dynalint.analysis.in_place_changes import changed_between_calls
from dynalint.analysis.loop_arguments import (TENSOR, UNKNOWN, Built, Drawn, both_drawn, constant,
                                              loop_argument_values)
from dynalint.analysis.module_index import (TOP_LEVEL, body_bindings, calls_by_name, names_bound_by,
                                            state_nodes, top_level_code)
from dynalint.analysis.number_callers import (SIZED_FACTORIES, bound_to_class, compiled_dynamic,
                                              foreign_call_sites, module_call_sites, replayed_sizes)
from dynalint.analysis.syntax import (NOT_LITERAL, binding_reach, dotted_name, encloses, is_main_guard, is_none,
                                      literal_constant, literal_value, parent_map, position_bound,
                                      simple_statements, walk)
from dynalint.analysis.values import Kind, Value

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.breaks import Break
    from dynalint.analysis.module_index import ClassInfo, FunctionInfo, ModuleIndex
    from dynalint.analysis.program import Program
    from dynalint.analysis.resume_paths import EagerPart


@dataclass(frozen=True)
class ParameterValues:
    """What callers pass to one parameter of a compiled entry point, where Dynamo guards on it."""

    function: "FunctionInfo"
    param: cst.Param
    values: frozenset[tuple[str, Any]]
    """``(type name, value)`` pairs of what is passed: literals (``True`` and ``1`` stay apart),
    ``("tensor", None)`` for a tensor, ``("list", items)``, ``("tuple", items)`` and ``("dict",
    entries)`` for displays (the keys of their literal elements, ``("?", None)`` for the others;
    None in place of the items when not known one by one), ``("device", (type, index))`` for
    ``torch.device(...)`` of literals."""
    in_loop: bool = False
    """A number that changes from one iteration of the loop that makes the calls is passed."""
    sites: tuple[tuple[str, str], ...] = ()
    """``(where, what)``: one call for each value, the first that passes it (``line 12``, or
    ```run` line 12`` in another module)."""
    static: bool = False
    """Compiled with ``dynamic=False``: every new number recompiles."""
    indexes: bool = False
    """0-d tensors of different integers, which the function uses as an index (Dynamo guards on their
    value: :func:`index_tensor_arguments`)."""
    changed_in_place: bool = False
    """One container that the caller changes in place between calls
    (:mod:`~dynalint.analysis.in_place_changes`)."""
    counts_loop: bool = False
    """An int the function passes to ``range()``: each new value recompiles (:func:`_counts_loop`)."""
    indexes_container: bool = False
    """An int the function indexes a list or module container with: each new value recompiles
    (:func:`_indexes_container`)."""
    by_keyword: bool = False
    """A call passes it by keyword: a wrapper that hands ``**kwargs`` on (``@torch.no_grad()``,
    ``functools.wraps``) holds it in a dict, whose values Dynamo guards in the wrapper's frame whatever the
    function does with it (measured on torch 2.13)."""

    @property
    def varies(self) -> bool:
        return self.in_loop or self.changed_in_place or len(self.values) >= 2


_Site = tuple[cst.Call, "FunctionInfo | None", "Program"]


def entry_argument_values(program: "Program", eager: "Callable[[FunctionInfo, cst.CSTNode], bool] | None" = None
                          ) -> Iterator[ParameterValues]:
    """Each parameter of each compiled entry point that callers pass different values and that the
    entry point reads where Dynamo specialises on it, in definition order; with ``eager`` (whether a
    node of a function lies in a part Dynamo runs eagerly), also the 0-d tensors used as an index
    (:func:`_index_tensor_values`)."""
    callees: dict[int, "FunctionInfo"] = {}

    def resolved() -> dict[int, "FunctionInfo"]:
        if not callees:
            callees.update(_callees(program))
        return callees

    for fn, sites, static in entry_call_sites(program):
        params = _call_params(fn)
        if sites and _skipped_from_first_call(fn, params, sites[0]):
            continue
        yield from _varying(program, fn, params, sites, static)
        yield from _star_varying(program, fn, params, sites, static)
        if eager is not None and sites:
            yield from _index_tensor_values(program, fn, params, sites, static, eager, resolved)


def _call_params(fn: "FunctionInfo") -> list[cst.Param]:
    """The parameters a call of ``fn`` gives values to: ``self`` aside, keyword-only ones too (valid calls
    pass them by keyword only, never in a position)."""
    p = fn.node.params
    params = [*p.posonly_params, *p.params, *p.kwonly_params]
    return params[1:] if fn.is_method else params


def closure_argument_values(program: "Program") -> Iterator[ParameterValues]:
    """What a loop of the module binds into what it compiles, iteration after iteration: the arguments of a
    factory whose nested function it compiles (``torch.compile(make_huber(delta))`` for ``delta in (1.0,
    0.5)``), or the keywords of a ``functools.partial`` it compiles.  Each compiled closure (partial) runs the
    same code, which Dynamo caches once, guarded on the captured (bound) value where the function reads it:
    another value recompiles it (measured on torch 2.13: ``delta == 1.0``, ``fn.keywords['gamma'] ==
    2.0``).  Given with the parameter of the factory (the partial's function) that takes the value."""
    entry_points = program.entry_points
    for call, where in program.index.compile_targets:
        if not call.args or call.args[0].keyword is not None or type(call.args[0].value) is not cst.Call:
            continue
        made = call.args[0].value
        target = entry_points.target_of(made, where)
        if target is None or target[1] is not None:
            continue
        fn = target[0]
        partial = program.index.resolve_expr(made.func) == "functools.partial"
        source = fn if partial else fn.outer
        if source is None:
            continue
        params = _call_params(source)
        names = ["(function)", *(p.name.value for p in params)] if partial else [p.name.value for p in params]
        caller = where if where is not None else top_level_code(program.index)
        for name, values in loop_argument_values(made, caller, names).items():
            keys = _distinct_keys(program, values)
            param = next((p for p in params if p.name.value == name), None)
            literals = {t for t, _ in keys} <= {"int", "float", "bool", "str"}
            if len(keys) < 2 or param is None or not (
                    _specialising_read(program, fn, name) if literals else _read(fn, name)):
                continue
            shown = ((_where((call, where, program), program), _in_turn(keys)),)
            yield ParameterValues(fn, param, frozenset(keys), False, shown)


def frame_argument_values(program: "Program", calls: "Iterable[tuple[CallEvent, FunctionInfo]]"
                          ) -> Iterator[ParameterValues]:
    """What the calls ``calls`` pass to the functions of the module they run as frames of their own, each
    given with that function (a module's ``forward`` for a call of the module): a helper whose body breaks,
    called from traced code, where Dynamo breaks at the call and runs the helper as a frame; or any helper
    called from the part of a frame it runs eagerly.  Each such frame is compiled and guarded on the
    arguments it reads, as an entry point is (measured on torch 2.13: ``group(x, None)`` then ``group(x, x *
    2)`` recompiles ``group`` on ``feats is None``).  Compiled entry points are left to
    :func:`entry_argument_values`."""
    entries = {id(fn) for fn, called, _ in entry_call_sites(program) if called}
    sites: dict[int, tuple["FunctionInfo", dict[int, _Site], list[CallEvent]]] = {}
    for ev, fn in calls:
        if id(fn) in entries or fn.owner not in (None, program.index) \
                or any(a.star for a in ev.call.args) or not _unconditional(ev):
            continue  # (a call under a test, of a flag of a config say, may never run)
        _, found, events = sites.setdefault(id(fn), (fn, {}, []))
        found.setdefault(id(ev.node), (ev.call, ev.function, program))
        events.append(ev)
    for fn, found, events in sites.values():
        params = _call_params(fn)
        varying = list(_varying(program, fn, params, list(found.values()), False))
        by_syntax = {id(v.param) for v in varying}
        yield from varying
        by_value = list(_none_or_tensor(program, fn, params, events))
        yield from (v for v in by_value if id(v.param) not in by_syntax)
        taken = by_syntax | {id(v.param) for v in by_value}
        yield from (v for v in _changing_sizes(program, fn, params, events) if id(v.param) not in taken)


def frame_may_hold_tensors(program: "Program", ev: CallEvent, callee: "FunctionInfo") -> bool:
    """The frame ``ev`` runs ``callee`` in may hold something tensor-related: it is given a tensor, a module
    or a value the analysis does not know, or its body names a torch or NumPy module (Dynamo skips a frame
    that holds nothing tensor-related, guarding nothing: a helper given strings and flags only)."""
    if any(v.kind in (Kind.TENSOR, Kind.MODULE, Kind.UNKNOWN) for v in (*ev.args, *ev.kwargs.values())):
        return True
    index = callee.owner or program.index
    return any((index.imports.get(name) or "").split(".")[0] in ("torch", "numpy")
               for name in callee.names_read())


_NONE = Value(Kind.PYTHON, const=None)


def _none_or_tensor(program: "Program", fn: "FunctionInfo", params: list[cst.Param], events: list[CallEvent]
                    ) -> Iterator[ParameterValues]:
    """The parameters of ``fn`` to which the calls ``events`` pass ``None`` in one calling context and a
    tensor in another, as the analysis evaluated them (one call in a method that its callers give ``None``
    and a tensor: ``sample(xyz, points)`` in the ``forward`` of two submodules), where ``fn`` reads them."""
    for i, prm in enumerate(params):
        name = prm.name.value
        passed: dict[tuple[str, Any], _Site] = {}
        for ev in events:
            v = _passed_at(ev, i, name)
            if v is None and name not in ev.kwargs and i >= len(ev.args) and prm.default is not None \
                    and _shape_of(prm.default) == ("NoneType", None):
                v = _NONE  # (left out: its default, `None`)
            if v is None:
                continue
            if v.kind is Kind.PYTHON and v.has_const and v.const is None:
                passed.setdefault(("NoneType", None), (ev.call, ev.function, program))
            elif v.is_tensor and not v.assumed:
                passed.setdefault(("tensor", None), (ev.call, ev.function, program))
        if len(passed) == 2 and _read(fn, name):
            shown = tuple((_where(site, program), "`None`" if key[0] == "NoneType" else "a tensor")
                          for key, site in passed.items())
            yield ParameterValues(fn, prm, frozenset(passed), False, shown)


def passed_afresh(program: "Program", fn: "FunctionInfo", name: str) -> bool:
    """Every call of the compiled function ``fn`` in the project builds the object it passes to the parameter
    ``name`` there (``step(State(...))``), or passes nothing for it: no call sees what an earlier one changed
    on it."""
    found = [(f, sites) for f, sites, _ in entry_call_sites(program) if f is fn]
    if not found or not found[0][1]:
        return False
    for call, _, _ in found[0][1]:
        arg = dict(_bound_arguments(call, _call_params(fn))).get(name)
        if arg is not None and not isinstance(arg, cst.Call):
            return False
    return True


def _changing_sizes(program: "Program", fn: "FunctionInfo", params: list[cst.Param], events: list[CallEvent]
                    ) -> Iterator[ParameterValues]:
    """The parameters of ``fn`` to which a call of ``events`` passes a size that the calls of the compiled
    function change (``n = pos.shape[0]`` handed on, :attr:`Value.dynamic`; a number the compiled function is
    given and hands on is reported at its own parameter, see :func:`handed_on`), where ``fn`` reads it
    as Dynamo specialises on it: the frame ``fn`` runs as receives a Python int, guarded on its value, and
    recompiles when the size first changes (measured on torch 2.13: ``coordination(edge_index, w, n)``, whose
    body breaks, recompiles on ``n == 8``; the int is then dynamic)."""
    for i, prm in enumerate(params):
        name = prm.name.value
        for ev in events:
            v = _passed_at(ev, i, name)
            if v is not None and v.dynamic and v.kind is Kind.SIZE and not v.is_bool \
                    and _specialising_read(program, fn, name) and _read_by_first_break(program, fn, name):
                site = (ev.call, ev.function, program)
                shown = ((_where(site, program), f"a size the calls of `{ev.function.name}` change"),)
                yield ParameterValues(fn, prm, frozenset({("int", None)}), True, shown)
                break


def _read_by_first_break(program: "Program", fn: "FunctionInfo", name: str) -> bool:
    """``fn`` mentions ``name`` before its first graph break or in what breaks there
    (``torch.sparse_coo_tensor(..., (n, n))``): the frame's first graph guards on it.  Read only after the
    break, in a frame resumed there, it was not measured to recompile (``graph_break()`` first, then
    ``x.view(rows, cols)``)."""
    classifier = program.break_classifier()
    order = body_order(fn)
    broken = [ev for ev in program.events if ev.function is fn and classifier.breaks_at(ev)]
    if not broken:
        return True
    first = min(broken, key=lambda ev: order.get(id(ev.node), -1))
    end = max(order.get(id(n), -1) for n in walk(first.node))
    return any(type(n) is cst.Name and n.value == name and order.get(id(n), end + 1) <= end
               for n in walk(fn.node.body, into_scopes=False))


def _passed_at(ev: CallEvent, i: int, name: str) -> Value | None:
    """The value the call ``ev`` passes the ``i``-th parameter, named ``name``: by keyword, or in its position
    when no keyword comes before it; None when it passes none."""
    if name in ev.kwargs:
        return ev.kwargs[name]
    if i < len(ev.args) and not any(a.keyword is not None for a in ev.call.args[:i + 1]):
        return ev.args[i]
    return None


def _skipped_from_first_call(fn: "FunctionInfo", params: list[cst.Param], first: _Site) -> bool:
    """Whether the first call of ``fn`` (in the file that calls it) returns one of its arguments as it
    is before any other statement runs: the frame traces no operation, and Dynamo skips it from then
    on, so later calls with other values run eagerly and never recompile (measured on torch 2.13:
    ``f(x)`` then ``f(x, t)`` of ``if bias is None: return x``). Only ``if`` tests of parameters
    against literals are followed; anything else is not known to be skipped."""
    call, caller, _ = first
    if caller is None or any(arg.star for arg in call.args):
        return False
    env: dict[str, tuple[str, Any] | None] = {p.name.value: None for p in params}
    given = set()
    for name, arg in _bound_arguments(call, params):
        env[name] = _shape_of(arg)
        given.add(name)
    for prm in params:
        if prm.name.value not in given:
            env[prm.name.value] = _shape_of(prm.default) if prm.default is not None else None
    return _returns_argument(fn.node.body.body if isinstance(fn.node.body, cst.IndentedBlock) else (), env) is True


def _returns_argument(body: Any, env: dict[str, tuple[str, Any] | None]) -> bool | None:
    """True when ``body`` run with the parameters' values ``env`` returns a parameter before anything
    else; False when it may do anything else; None when it runs to its end doing nothing."""
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Return):
            value = stmt.body[0].value
            return isinstance(value, cst.Name) and value.value in env
        if not isinstance(stmt, cst.If):
            return False
        taken = _test(stmt.test, env)
        if taken is None:
            return False
        branch = stmt.body if taken else stmt.orelse
        if isinstance(branch, cst.Else):
            branch = branch.body
        if isinstance(branch, cst.If):
            found = _returns_argument([branch], env)
        elif branch is not None:
            found = _returns_argument(branch.body if isinstance(branch, cst.IndentedBlock) else (), env)
        else:
            found = None
        if found is not None:
            return found
    return None


_COMPARED = {cst.LessThan: "__lt__", cst.GreaterThan: "__gt__", cst.LessThanEqual: "__le__",
             cst.GreaterThanEqual: "__ge__", cst.Equal: "__eq__", cst.NotEqual: "__ne__"}


def _test(test: cst.BaseExpression, env: dict[str, tuple[str, Any] | None]) -> bool | None:
    """The value of an ``if`` test of a parameter against a literal (``bias is None``, ``level > 1``,
    ``not flag``); None when not known."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _test(test.expression, env)
        return None if inner is None else not inner
    if isinstance(test, cst.Name) and test.value in env:
        key = env[test.value]
        return bool(key[1]) if key is not None and key[0] in ("bool", "int", "float", "str") else None
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.left, cst.Name) and test.left.value in env):
        return None
    key = env[test.left.value]
    target = test.comparisons[0]
    if key is None:
        return None
    if isinstance(target.operator, (cst.Is, cst.IsNot)) and isinstance(target.comparator, cst.Name) \
            and target.comparator.value == "None":
        return (key[0] == "NoneType") == isinstance(target.operator, cst.Is)
    method = _COMPARED.get(type(target.operator))
    other = literal_constant(target.comparator)
    if method is None or other is NOT_LITERAL or key[0] not in ("bool", "int", "float", "str"):
        return None
    try:
        result = getattr(key[1], method)(other)
    except Exception:
        return None
    return None if result is NotImplemented else bool(result)


def entry_call_sites(program: "Program") -> Iterator[tuple["FunctionInfo", list[_Site], bool]]:
    """Each compiled entry point of the module with the calls that run it compiled from code that is not
    compiled itself (its callers in the project, the calls of the names ``torch.compile(...)`` returned
    is bound to), and whether it is compiled with ``dynamic=False``."""
    idx = program.index
    compiled = {id(fn) for fn in program.entry_compiled}
    by_class: dict[str, list[tuple[cst.Call, "FunctionInfo"]]] | None = None
    handles = _compiled_handles(program)
    immediate = _immediate_calls(program)
    held = _instance_handle_calls(program)
    for fn in program.compiled:
        entry = fn.compile_decorated or (fn.name == "forward" and fn.cls is not None and fn.cls.is_module)
        through = [(name, scope, static, reached) for name, scope, target, static, reached in handles
                   if target is fn]
        called = [(call, caller, program) for call, caller, target in immediate if target is fn]
        called += [(call, caller, program) for call, caller in held.get(id(fn), ())]
        if not entry and not through and not called:
            continue
        calls: list[tuple[cst.Call, "FunctionInfo | None"]] = []
        if entry and fn.cls is None:
            calls = calls_by_name(idx, fn)
        elif entry and fn.name != "forward":  # a method compiled as a decorator: `obj.step(...)`
            calls = module_call_sites(program, fn)
        elif entry:
            if by_class is None:
                by_class = _instance_calls(idx, compiled)
            calls = list(by_class.get(fn.cls.name, ()))  # type: ignore[union-attr]
        sites: list[_Site] = [(call, caller, program) for call, caller in calls
                              if caller is None or id(caller) not in compiled]
        if entry and program.project is not None:
            # callers in the other files of the project (those that run compiled are inlined)
            sites += [(call, caller, owner) for call, caller, owner in foreign_call_sites(program, fn, strict=False)
                      if caller is None or not _compiled_itself(caller)]
        # calls of what `torch.compile(...)` returned, where that name is bound
        sites += [(call, caller, program) for name, scope, _, reached in through
                  for call, caller in _handle_calls(idx, name)
                  if (scope is None or caller is scope) and (reached is None or id(call) in reached)]
        # ... and where a function of the module it is handed to calls it (`drive(step_c, x)`)
        sites += [(call, caller, program) for name, scope, _, _ in through if "." not in name
                  for call, caller in _handed_calls(idx, name, scope)]
        sites += called
        yield fn, sites, any(st for _, _, st, _ in through) or _static_decorator(fn)


def grad_mode_flips(program: "Program") -> Iterator[tuple["FunctionInfo", _Site, _Site]]:
    """Each compiled entry point with a call that runs it with grad mode on and one that runs it with
    grad mode off (``with torch.no_grad():``, ``torch.inference_mode()``, a caller decorated with
    either): Dynamo guards on the grad mode, so the second mode recompiles it (measured on torch 2.13:
    ``GLOBAL_STATE changed: grad_mode``, whatever the function computes).  A call counts as on only
    when nothing in the module can turn grad mode off around it: no ``torch.set_grad_enabled`` called as a
    statement in the module (which may turn it off anywhere after; in a ``with``, or as a decorator, it sets
    the mode of its block only, where a call runs in a mode not known), and its caller called in the module
    (or the function that turns grad mode off around the other call), never from a no-grad context."""
    if _sets_grad_mode_for_good(program.index):
        return
    scripted = bool(script_grad_modes(program.index))
    for fn, sites, _ in entry_call_sites(program):
        if scripted and any(caller is not None for _, caller, _ in sites):
            continue  # a function's calls run in whatever mode the script's statements set before its call
        on, off = _mode_sites(sites)
        if off is not None and on is not None:
            yield fn, on, off


def _mode_sites(sites: list[_Site]) -> tuple[_Site | None, _Site | None]:
    """(a call known to run with grad mode on, a call that runs with it off) among ``sites``: off inside a
    no-grad block or a caller decorated so; on only where nothing can turn it off around the call and the
    caller is never called from a no-grad context (:func:`_caller_runs_with_grad`)."""
    off = next((s for s in sites if not _grad_enabled(s)), None)
    on = next((s for s in sites if _grad_enabled(s) and not _grad_mode_set(s)
               and _caller_runs_with_grad(s, off or s)), None)
    return on, off


_EntryCall = tuple["FunctionInfo", _Site]
"""An entry point and a call that runs it compiled."""


def shared_frame_grad_flips(program: "Program", breaks: "Iterable[Break]",
                            eager: Callable[["FunctionInfo"], bool]
                            ) -> Iterator[tuple["FunctionInfo", _EntryCall, _EntryCall]]:
    """Each function that two compiled entry points run as a frame of its own, one called with grad mode on
    and the other with it off (called under ``torch.no_grad()``, or decorated so), with those entry points and
    calls: (function, (entry, call with grad on), (entry, call with grad off)).  A function whose body breaks
    the graph, or calls one that does, is a frame of its own wherever it is called from, with
    graphs kept on its code and shared by every entry point that reaches it, so the second mode recompiles it
    (measured on torch 2.13: ``GLOBAL_STATE changed: grad_mode`` on ``forward``, compiled once through a loss
    function under grad and once as the model under ``torch.no_grad()``).  Of the functions both reach, the
    outermost are reported (what they call may run inside them in one mode only: a branch on
    ``self.training``); not one decorated to set its own grad mode, nor one Dynamo runs ``eager``ly (a break
    in a loop), which has no graph.  It must be called, and reach one of ``breaks``, whatever path each takes
    (:func:`surely_framed`); a call or break behind a branch may run on one entry point's path only (``if
    self.training:``).  An entry
    point called in both modes is :func:`grad_mode_flips`'s."""
    if _sets_grad_mode_for_good(program.index) or script_grad_modes(program.index):
        return
    on: dict[int, _EntryCall] = {}
    off: dict[int, _EntryCall] = {}
    for fn, sites, _ in entry_call_sites(program):
        if not sites:
            continue
        if any(_grad_off(d.decorator) for d in fn.node.decorators):
            off[id(fn)] = (fn, sites[0])
            continue
        on_site, off_site = _mode_sites(sites)
        if off_site is not None:
            off[id(fn)] = (fn, off_site)
        if on_site is not None:
            on[id(fn)] = (fn, on_site)
    if not on or not off:
        return
    callees = _call_graph(program)
    framed = _framed(program, callees, breaks)
    reach = {key: _reached(entry, callees) for key, (entry, _) in (*on.items(), *off.items())}
    reported: set[int] = set()
    for k_on, (first, on_site) in on.items():
        for k_off, (second, off_site) in off.items():
            if first is second:
                continue
            shared = {key: fn for key, fn in reach[k_on].items()
                      if key in reach[k_off] and key in framed and not eager(fn)
                      and not _sets_own_mode(fn)}
            inner = {key for fn in shared.values() for key in _reached(fn, callees) if key != id(fn)}
            for key, fn in shared.items():
                if key not in inner and key not in reported:
                    reported.add(key)
                    yield fn, (first, on_site), (second, off_site)


def _sets_own_mode(fn: "FunctionInfo") -> bool:
    """``fn`` is decorated to run in a grad mode of its own (``@torch.no_grad()``,
    ``@torch.enable_grad()``)."""
    return any(_grad_off(d.decorator) or _grad_on(d.decorator) for d in fn.node.decorators)


def surely_framed(program: "Program", breaks: "Iterable[Break]") -> set[int]:
    """``id`` of the analysed functions that break the graph whenever they run, or call one that does, through
    statements and calls outside any branch: one of ``breaks`` outside any loop, in a statement of the
    function's body.  Dynamo runs each as a frame of its own wherever it is called from."""
    return _framed(program, _call_graph(program), breaks)


def _framed(program: "Program", callees: dict[int, list["FunctionInfo"]], breaks: "Iterable[Break]"
            ) -> set[int]:
    """``id`` of the analysed functions with one of ``breaks`` outside any loop in a statement of their body,
    or that call, at any depth, one that has."""
    analysed = {id(fn) for fn in program.compiled}
    framed = {id(b.event.function) for b in breaks if not b.in_loop and top_statement(b.event)} & analysed
    grew = True
    while grew:
        grew = False
        for key, called in callees.items():
            if key not in framed and any(id(c) in framed for c in called):
                framed.add(key)
                grew = True
    return framed


def _call_graph(program: "Program") -> dict[int, list["FunctionInfo"]]:
    """``id`` of each analysed function -> the functions of the checked code it calls whenever it runs (a
    module's ``forward`` for a call of the module): in its own statements outside any branch, loop or
    ``try``."""
    out: dict[int, list["FunctionInfo"]] = {}
    for ev in program.events:
        if not isinstance(ev, CallEvent) or not top_statement(ev):
            continue
        targets = [ev.callee] if ev.callee is not None else []
        if ev.module is not None and ev.module.cls is not None:
            forward = ev.module.cls.find_method("forward")
            if forward is not None:
                targets.append(forward)
        if targets:
            out.setdefault(id(ev.function), []).extend(targets)
    return out


def _unconditional(ev: Event) -> bool:
    """``ev`` runs whenever its function does (or at each iteration of the loops around it): in a statement
    no ``if``, ``try`` or ``match`` holds, outside the operands Python may skip (``a and b``, ``x if c else
    y``)."""
    return any(s is ev.statement for s in ev.function.derived("unconditional statements", lambda node: tuple(
        _unconditional_statements(node.body)))) and not any(
        isinstance(n, cst.BooleanOperation) and encloses(n.right, ev.node)
        or isinstance(n, cst.IfExp) and not encloses(n.test, ev.node) and encloses(n, ev.node)
        for n in walk(ev.statement, into_scopes=False))


def _unconditional_statements(block: cst.BaseSuite) -> Iterator[cst.CSTNode]:
    for statement in simple_statements(block):
        if isinstance(statement, (cst.For, cst.While, cst.With)):
            yield from _unconditional_statements(statement.body)
        elif not isinstance(statement, (cst.If, cst.Try, cst.Match, cst.FunctionDef, cst.ClassDef)):
            yield statement


def top_statement(ev: Event) -> bool:
    """``ev`` is in one of the statements of its function's body, outside any compound statement's block (the
    test of an ``if`` counts: it runs whenever the function does)."""
    return any(s is ev.statement for s in ev.function.derived("top statements", lambda node: tuple(
        simple_statements(node.body))))


def _reached(entry: "FunctionInfo", callees: dict[int, list["FunctionInfo"]]) -> dict[int, "FunctionInfo"]:
    """``entry`` and the functions it calls, at any depth, by ``id``."""
    seen = {id(entry): entry}
    stack = [entry]
    while stack:
        for callee in callees.get(id(stack.pop()), ()):
            if id(callee) not in seen:
                seen[id(callee)] = callee
                stack.append(callee)
    return seen


#: torch functions that draw a fresh tensor from the random generator at every call
RANDOM_TENSORS = frozenset(f"torch.{name}" for name in K.TORCH_RANDOM_FUNCS)


def fresh_data_functions(program: "Program") -> set[int]:
    """``id`` of the compiled functions that run on tensor data drawn afresh from the random generator
    at each call: a compiled entry point that the module calls at least twice (two calls, or one in a
    ``for`` over at least two values) with a tensor a ``torch.randn``-like call makes at that call (or
    binds in the same loop body), and the functions of the module it calls, at any depth.  A size
    computed from such data (``(x > 0).nonzero()``) is then known to change between calls; data the
    code does not show being drawn anew (a fixed batch) is not.  So is an entry point the module calls
    with different data: tensors written as different literals at two calls (``f(torch.tensor([1, 2]))``,
    ``f(torch.tensor([3, 1, 0]))``), or, in a ``for`` over batches (not over numbers, a ``range`` or a
    display), what the loop's target binds (``for x, y in loader: step(x, y)``)."""
    entries: set[int] = set()
    for fn, sites, _ in entry_call_sites(program):
        fresh = [site for site in sites if _passes_fresh_tensor(program, site)]
        if len(fresh) >= 2 or any(_repeating_loop(site) is not None for site in fresh) \
                or _distinct_literal_tensors(program, sites) or any(map(_passes_iterated_batch, sites)):
            entries.add(id(fn))
    if not entries:
        return entries
    reached = set(entries)
    grew = True
    while grew:  # the functions of the module a reached function calls
        grew = False
        for fn in program.compiled:
            if id(fn) not in reached and fn.cls is None and any(
                    caller is not None and id(caller) in reached
                    for _, caller in program.index.call_sites.get(fn.name, ())):
                reached.add(id(fn))
                grew = True
    return reached


def _passes_fresh_tensor(program: "Program", site: _Site) -> bool:
    """The call passes a tensor drawn at that call: ``f(torch.randn(4))``, or a name the caller binds
    to such a draw inside the loop that makes the call."""
    call, caller, owner = site
    if owner is not program:
        return False
    loop = _repeating_loop(site)
    for arg in call.args:
        value = arg.value
        if isinstance(value, cst.Call) and (program.index.resolve_expr(value.func) in RANDOM_TENSORS
                                            or _draws_afresh(program, value)):
            return True
        if isinstance(value, cst.Name) and loop is not None and _drawn_in(program, loop, value.value):
            return True
    return False


#: torch functions that make a tensor of the data written in their first argument
_LITERAL_TENSORS = frozenset({"torch.tensor", "torch.as_tensor"})


def _distinct_literal_tensors(program: "Program", sites: list[_Site]) -> bool:
    """Two calls of the module pass, at the same position, tensors made of different literal data
    (``torch.tensor([1, 2, 5])`` and ``torch.tensor([0, 2, 6])``)."""
    seen: dict[int, set[str]] = {}
    for call, _, owner in sites:
        if owner is not program:
            continue
        for i, arg in enumerate(call.args):
            value = arg.value
            if arg.keyword is None and isinstance(value, cst.Call) and value.args \
                    and program.index.resolve_expr(value.func) in _LITERAL_TENSORS \
                    and _literal_data(value.args[0].value):
                seen.setdefault(i, set()).add(program.index.module.code_for_node(value.args[0].value))
    return any(len(texts) >= 2 for texts in seen.values())


def _literal_data(node: cst.BaseExpression) -> bool:
    """Numbers written out, possibly in nested lists or tuples (``[[1, 2], [3, -4]]``)."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _literal_data(e.value) for e in node.elements)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float)) \
        or (isinstance(node, cst.Name) and node.value in ("True", "False"))


def _over_batches(it: cst.BaseExpression) -> bool:
    """A ``for`` over ``it`` goes over data, not over numbers: not a display or a ``range``, nor
    ``enumerate``/``zip`` of only those."""
    if isinstance(it, (cst.List, cst.Tuple, cst.Set)):
        return False
    if isinstance(it, cst.Call):
        name = dotted_name(it.func)
        if name == "range":
            return False
        if name in ("enumerate", "zip", "reversed", "sorted"):
            return any(_over_batches(a.value) for a in it.args if a.keyword is None)
    return True


def _passes_iterated_batch(site: _Site) -> bool:
    """The call passes what a ``for`` around it binds in its target (``x``, ``batch["x"]``, ``batch.x``),
    the loop going over something other than numbers, a ``range`` or a display: batches of data."""
    call, caller = site[0], _replayed_caller(site)
    targets: set[str] = set()
    for n in walk(caller.node.body, into_scopes=False):
        if isinstance(n, cst.For) and _over_batches(n.iter) \
                and any(m is call for m in walk(n.body, into_scopes=False)):
            targets |= {t.value for t in walk(n.target) if isinstance(t, cst.Name)}
    if not targets:
        return False
    for arg in call.args:
        root = arg.value
        while isinstance(root, (cst.Subscript, cst.Attribute)):
            root = root.value
        if isinstance(root, cst.Name) and root.value in targets:
            return True
    return False


def _draws_afresh(program: "Program", call: cst.Call) -> bool:
    """``call`` runs a function of the module each of whose ``return`` values is computed from a random draw
    it makes (``def synthetic(n): return torch.randn(n).cumsum(0)``): new data at each call."""
    return _draws_item_afresh(program, call, -1)


def _drawn_in(program: "Program", loop: cst.For, name: str) -> bool:
    """Every binding of ``name`` in the body of ``loop`` is an assignment of a random draw, or of the item of
    what a helper of the module returns that is computed from one (``x, y = make_batch(h, w)`` with ``return
    torch.randn(...), torch.randint(...)``), and there is one."""
    found = [(n.value, at) for n in walk(loop.body, into_scopes=False) if isinstance(n, cst.Assign)
             for t in n.targets if (at := position_bound(t.target, name)) is not None]
    bindings = [n for n in walk(loop.body, into_scopes=False) if name in names_bound_by(n)]
    return bool(found) and len(found) == len(bindings) and all(
        isinstance(v, cst.Call) and (program.index.resolve_expr(v.func) in RANDOM_TENSORS and at == -1
                                     or _draws_item_afresh(program, v, at)) for v, at in found)


def _draws_item_afresh(program: "Program", call: cst.Call, at: int) -> bool:
    """``call`` runs a function of the module each of whose ``return`` values (their item ``at``, for an
    unpacked tuple; the whole value for -1) is computed from a random draw it makes there."""
    callee = program.names.static_value_of(call.func)
    fn = callee.func if callee is not None and callee.kind is Kind.FUNCTION and not callee.is_class else None
    if fn is None or fn.owner is not program.index:
        return False
    returns = [n.value for n in walk(fn.node.body, into_scopes=False) if isinstance(n, cst.Return)]
    if at >= 0:
        returns = [r.elements[at].value if isinstance(r, cst.Tuple) and at < len(r.elements)
                   and isinstance(r.elements[at], cst.Element) else None for r in returns]
    return bool(returns) and all(r is not None and any(
        isinstance(n, cst.Call) and program.index.resolve_expr(n.func) in RANDOM_TENSORS for n in walk(r))
        for r in returns)


def _replayed_caller(site: _Site) -> "FunctionInfo":
    """The function a call sits in, or for a call at module level the module's own statements run as one
    (:func:`top_level_code`): what a replay of the loops around the call runs."""
    _, caller, owner = site
    return caller if caller is not None else top_level_code(owner.index)


def _repeating_loop(site: _Site, counted: bool = True) -> cst.For | None:
    """The innermost ``for`` of the caller around the call; ``counted``: one that runs at least twice
    (``range(N)``, a display of two items or more, a comprehension over such a range, or a name bound to a
    display with two different values)."""
    call, caller = site[0], _replayed_caller(site)
    found = None
    for n in walk(caller.node.body, into_scopes=False):
        if isinstance(n, cst.For) and any(m is call for m in walk(n.body, into_scopes=False)) \
                and (not counted or _counts_to_two(n.iter) or _takes_two_values(n.iter, caller)
                     or _two_items(n.iter)):
            found = n  # walked outside in: the last is the innermost
    return found



def set_with_size_change(program: "Program", setters: list["FunctionInfo"], attribute: str) -> bool:
    """Whether every change of ``attribute`` that the methods ``setters`` make comes with a recompile
    Dynamo makes anyway: each call of a setter sits in a loop that also calls a compiled entry point,
    passes the setter floats (the replay knows them all), and its value first changes at the iteration
    where a tensor the entry call passes first changes size.  Dynamo then recompiles once for both, and
    automatic dynamic makes the size and the float dynamic together: the float adds no recompile of its
    own (measured on torch 2.13: the recompile names only the size; an int attribute of an
    ``nn.Module`` stays static and recompiles at each later change)."""
    entries = [site for _, sites, static in entry_call_sites(program) if not static for site in sites]
    for setter in setters:
        param = _stored_parameter(setter, attribute)
        calls = program.index.call_sites.get(setter.name, ())
        if param is None or not calls:
            return False
        names = [p.name.value for p in setter.node.params.params][1 if setter.is_method else 0:]
        for call, caller in calls:
            loop = _repeating_loop((call, caller, program), counted=False)  # the replay counts the iterations
            if loop is None or caller is None:
                return False
            values = loop_argument_values(call, caller, names).get(param, [])
            if not values or not all(type(v) is float for v in values):
                return False
            change = _first_change(values)
            if change is None or not any(
                    site[1] is caller and _repeating_loop(site, counted=False) is loop
                    and first_size_change(program, site) == change
                    for site in entries):
                return False
    return bool(setters)


def second_calls_recompile(program: "Program") -> bool:
    """Whether the second call of every compiled entry point the module calls recompiles whatever the
    compiled code changes: its calls are all in one function, the first of them in a loop that makes
    it on every iteration, and a tensor it passes changes size between the first two iterations
    (:func:`first_size_change`).  What compiled code changes once, at its first call (a dict on
    ``self`` that it gives its keys), then adds no recompile of its own (measured on torch 2.13:
    the recompile names only the size)."""
    called = False
    for _, sites, _ in entry_call_sites(program):
        if not sites:
            continue
        called = True
        callers = {id(caller) for _, caller, _ in sites}
        first = sites[0]
        order = {id(n): i for i, n in enumerate(walk(first[1].node.body))} if first[1] is not None else {}
        first = min(sites, key=lambda s: order.get(id(s[0]), 0))
        loop = _repeating_loop(first, counted=False)
        if len(callers) != 1 or first[1] is None or loop is None or not _every_iteration(loop, first[0]) \
                or first_size_change(program, first) != 1:
            return False
    return called


def _stored_parameter(setter: "FunctionInfo", attribute: str) -> str | None:
    """The parameter of ``setter`` that every store of ``attribute`` in it writes as it is."""
    writes = [n for n in walk(setter.node.body) if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign))
              and any(isinstance(t, cst.Attribute) and t.attr.value == attribute
                      for t in ([a.target for a in n.targets] if isinstance(n, cst.Assign) else [n.target]))]
    stored = {n.value.value for n in writes if isinstance(n, cst.Assign) and isinstance(n.value, cst.Name)}
    if len(stored) != 1 or len(writes) != sum(1 for n in writes if isinstance(n, cst.Assign)
                                              and isinstance(n.value, cst.Name)):
        return None
    name = stored.pop()
    return name if name in setter.param_names() else None


def first_size_change(program: "Program", site: _Site) -> int | None:
    """The first iteration (1: the second) of the loop around the call ``site`` at which a tensor it
    passes has another size than at the first: one the loop body makes with a torch factory of sizes the
    replay knows (``torch.randint(0, 96, (2, n + 1))``, ``torch.randn(b, t)``), passed as it is, sliced,
    or through a name bound to it there.  None when no such size is known to change (or an unknown
    size comes first)."""
    call, caller = site[0], _replayed_caller(site)
    loop = _repeating_loop(site, counted=False)
    if loop is None:
        return None
    found = [change for arg in call.args if not arg.keyword
             for factory in [_factory_of(program, loop, arg.value)] if factory is not None
             for change in [_first_change(replayed_sizes(program, factory, caller))] if change is not None]
    return min(found, default=None)


def _factory_of(program: "Program", loop: cst.For, node: cst.BaseExpression) -> cst.Call | None:
    """The factory call that makes the tensor ``node`` is (or a slice of), in the body of ``loop``."""
    while isinstance(node, cst.Subscript):
        node = node.value
    if isinstance(node, cst.Name):
        values = [n.value for n in walk(loop.body, into_scopes=False) if isinstance(n, cst.Assign)
                  and any(isinstance(t.target, cst.Name) and t.target.value == node.value for t in n.targets)]
        node = values[0] if len(values) == 1 else node
    if isinstance(node, cst.Call) and program.index.resolve_expr(node.func) in SIZED_FACTORIES:
        return node
    return None


def _first_change(values: list[Any]) -> int | None:
    """The first index at which ``values`` differ from the first, all known up to there."""
    if not values or _unknown_in(values[0]):
        return None
    for i, v in enumerate(values[1:], 1):
        if _unknown_in(v):
            return None
        if v != values[0]:
            return i
    return None


def _unknown_in(value: Any) -> bool:
    return value is UNKNOWN or (isinstance(value, tuple) and any(_unknown_in(v) for v in value))


def _caller_runs_with_grad(site: _Site, off: _Site) -> bool:
    """The function ``site`` sits in is never called from a no-grad context in its module, and it is
    called there or turns grad mode off itself around the call ``off`` (a function no call shows
    otherwise runs in a mode not known)."""
    _, caller, owner = site
    if caller is None:
        return True
    calls = owner.index.call_sites.get(caller.name, ())
    return (bool(calls) or off[1] is caller) and all(_grad_enabled((call, outer, owner))
                                                     and not _grad_mode_set((call, outer, owner))
                                                     for call, outer in calls)


def site_where(program: "Program", site: _Site) -> str:
    """Where a call is, as the messages show it (see :func:`site_label`)."""
    return _where(site, program)


def _varying(program: "Program", fn: "FunctionInfo", params: list[cst.Param], sites: list[_Site],
             static: bool) -> Iterator[ParameterValues]:
    """The parameters of ``fn`` that the calls at ``sites`` pass different values."""
    seen: dict[str, dict[tuple[str, Any], tuple[_Site, str]]] = {}
    in_loop: dict[str, _Site] = {}
    undecided: dict[str, list[tuple[cst.BaseExpression, _Site]]] = {}
    looped: dict[str, tuple[_Site, list[tuple[str, Any]]]] = {}
    modes: dict[str, dict[bool, set[tuple[str, Any]]]] = {}
    """Parameter -> grad mode of the calls (enabled or not) -> what those calls pass."""

    def note(name: str, key: tuple[str, Any], site: _Site, what: str) -> None:
        seen.setdefault(name, {}).setdefault(key, (site, what))
        modes.setdefault(name, {}).setdefault(_grad_enabled(site), set()).add(key)

    def visit(site: _Site, site_params: list[cst.Param], rename: dict[str, str],
              picks: dict[tuple[str, Any], str] | None = None,
              derived: dict[str, cst.BaseExpression] | None = None) -> None:
        """What the call of ``site`` passes to the parameters ``site_params`` of its callee, each taken for the
        parameter of ``fn`` that ``rename`` maps it to (the callee is ``fn``, or a wrapper that hands the value
        on to ``fn`` as it is), and the items of them ``picks`` maps to one (a wrapper's ``params["greedy"]``)."""
        call = site[0]
        given = set()
        replayed = _replayed_caller(site)
        values = loop_argument_values(call, replayed, [p.name.value for p in site_params], site[2].project)
        replayed_keys = {rename[n]: keys for n, passed in values.items()
                         if n in rename and len(keys := _distinct_keys(program, passed)) >= 2}
        for (own, item), name in (picks or {}).items():  # (what the replay's dicts hold there)
            held = [v[item] for v in values.get(own, ()) if isinstance(v, dict) and item in v]
            keys = _distinct_keys(program, held)
            if len(keys) >= 2:
                replayed_keys.setdefault(name, keys)
        # (`step + 1` of the wrapper's `step`, value by value)
        for name, expression in (derived or {}).items():
            used = {n.value for n in walk(expression) if type(n) is cst.Name}
            runs = {len(values.get(n, ())) for n in used}
            if len(runs) == 1 and (count := runs.pop()) > 0:
                computed = [constant(expression, {n: values[n][i] for n in used}) for i in range(count)]
                keys = _distinct_keys(program, [v for v in computed if v is not UNKNOWN])
                if len(keys) >= 2:
                    replayed_keys.setdefault(name, keys)
        # one value on every iteration that makes the call (`f(x, t_max)` under `if step % 3 == 2:`): that
        # value, which another call of `fn` may pass apart
        single = {rename[n]: keys[0] for n, passed in values.items()
                  if n in rename and rename[n] not in replayed_keys and passed
                  and None not in (keys := [_key_of(program, v) for v in passed]) and len(set(keys)) == 1}
        for name, key in single.items():
            note(name, key, site, _shown(key))
        for own, arg in _bound_arguments(call, site_params):
            given.add(own)
            name = rename.get(own)
            if name is None or name in replayed_keys:
                continue  # (what the replay of its loops passes, value by value)
            key = _shape_of(arg) or _record_of(program, arg)
            if key is not None:
                note(name, key, site, _shown(key))
            else:
                undecided.setdefault(name, []).append((arg, site))
        if not any(arg.star for arg in call.args):
            # a parameter the call leaves out takes its default
            for prm in site_params[len([a for a in call.args if a.keyword is None]):]:
                key = _shape_of(prm.default) if prm.default is not None and prm.name.value not in given else None
                if key is not None and key[0] != "list" and prm.name.value in rename:
                    note(rename[prm.name.value], key, site, f"its default {_shown(key)}")
        for own in _loop_varying_arguments(call, replayed, site_params):
            if own in rename:
                in_loop.setdefault(rename[own], site)
        # (under `dynamic=True` a number counted so may be symbolic from the first call: not claimed)
        for own, arg in () if dynamic else _counted_arguments(site, replayed, site_params):
            if own in rename and rename[own] not in in_loop and _number_passed(site, arg):
                in_loop.setdefault(rename[own], site)
        for name, keys in replayed_keys.items():
            looped.setdefault(name, (site, keys))

    dynamic = not static and compiled_dynamic(program, fn)
    for site in sites:
        visit(site, params, {p.name.value: p.name.value for p in params})
        for outer, wrapper_params, rename, picks, derived in _forwarding_sites(program, site, params):
            visit(outer, wrapper_params, rename, picks, derived)
    for name, pending in undecided.items():
        for arg, site in pending:
            if _none_then_tensor(site, arg, fn):  # a warm start: `prev = None`, then the loop rebinds it
                note(name, ("NoneType", None), site, "`None` on the first iteration")
                note(name, ("tensor", None), site, "another value on the next")
                break
        # one number at the calls: is a tensor passed at another? (`f(x, 1)`, then `f(x, torch.ones(4))`)
        given = seen.get(name, {})
        if len(given) == 1 and next(iter(given))[0] in ("int", "float", "bool"):
            for arg, site in pending:
                if _is_tensor(site, arg):
                    note(name, ("tensor", None), site, "a tensor")
                    break
        # None at one call: is a tensor, an object of a class of the checked code or a container passed at another?
        if ("NoneType", None) in seen.get(name, {}):
            for arg, site in pending:
                other = _other_than_none(_passed_value(site, arg))
                if other is not None:
                    note(name, other[0], site, other[1])
                    break
    changed = _changed_in_place(fn, params, sites)
    for prm in params:
        name = prm.name.value
        passed = seen.get(name, {})
        values = frozenset(passed) | frozenset(looped[name][1] if name in looped else ())
        found = ParameterValues(fn, prm, values, name in in_loop)
        if not found.varies and name in changed:
            site, change = changed[name]
            what = f"a container that `{_code(change)}` changes before the next call"
            shown = ((_where(site, program), what),)
            yield ParameterValues(fn, prm, values, sites=shown, static=static, changed_in_place=True)
            continue
        if not found.varies:
            continue
        if name not in in_loop and name not in looped and all(len(keys) < 2 for keys in modes[name].values()):
            continue  # each value comes with its own grad mode, which compiles a graph of its own anyway
        kinds = {t for t, _ in values}
        indexes = "int" in kinds and _indexes_container(program, fn, name)
        if kinds == {"int"} and not static and compiled_dynamic(program, fn) and not _counts_loop(fn, name) \
                and not indexes:
            continue  # `dynamic=True`: an int is symbolic from the first call, and no new one recompiles
        if kinds <= {"int", "float", "bool", "str"}:
            if not _specialising_read(program, fn, name):
                continue  # a constant only passed through (or not read) installs no guard
        elif not _read(fn, name):
            continue  # an argument the function never reads installs no guard
        if kinds & {"list", "tuple", "dict", "record", "tensor", "NoneType"} and not (
                kinds <= {"list", "tuple"} or kinds == {"dict"} or kinds == {"record"}
                or kinds <= {"tensor", "NoneType"} or kinds == {"NoneType", "object"}
                or kinds <= {"NoneType", "int", "float"} or len(kinds) == 2 and "NoneType" in kinds
                or kinds in ({"int", "tuple"}, {"int", "list"}) or kinds <= _TYPES_APART
                or len(kinds) == 2 and "tensor" in kinds and kinds & {"int", "float", "bool"}
                and len(values) == 2):
            # (`None` against a number: `s is None` fails, then `s == 0.05`; against a list, tuple or string,
            # `s is None` fails; an int against a tuple: `s == 2` fails; measured on torch 2.13)
            numbers = frozenset(key for key in values if key[0] in ("int", "float"))
            if len(numbers) < 2 or not _specialising_read(program, fn, name):
                continue  # a literal against a container or tensor: not one of the cases measured
            # numbers that differ, whatever other calls pass: Dynamo guards each on its value (measured on
            # torch 2.13: `15.0`, `25.0` recompile, a tensor at another call then fails the type check)
            values, kinds = numbers, {t for t, _ in numbers}
            passed = {key: given for key, given in passed.items() if key in numbers}
            if name in looped:
                looped[name] = (looped[name][0], [key for key in looped[name][1] if key in numbers])
            in_loop.pop(name, None)
        if len(kinds) == 1 and kinds & {"list", "tuple", "dict", "record"} \
                and not _contents_guarded(fn, name, values):
            continue  # containers of one kind that differ only where the function does not look
        shown = [(_where(site, program), _kind_only(key, what) if len(kinds) > 1 else what)
                 for key, (site, what) in passed.items()]
        if name in looped:
            site, keys = looped[name]
            shown.append((_where(site, program), _in_turn(keys)))
        if name in in_loop and not (name in looped and looped[name][0] is in_loop[name]):
            shown.append((_where(in_loop[name], program), "values that change from one loop iteration to the next"))
        yield ParameterValues(fn, prm, values, name in in_loop, tuple(dict.fromkeys(shown)), static,
                              counts_loop="int" in kinds and _counts_loop(fn, name),
                              indexes_container=indexes,
                              by_keyword=any(a.keyword is not None and a.keyword.value == name
                                             for site in sites for a in site[0].args))


_TYPES_APART = frozenset({"list", "tuple", "dict", "tensor", "NoneType", "str"})
"""Kinds of value of which each compiles a graph of its own at one parameter the function reads (measured on
torch 2.13: a tensor, then a list, then a dict, then a string, each fails the type check of the last; so does
one number against a tensor, `y == 1` or the tensor type check failing, whichever comes first)."""

_GRAD_OFF = frozenset({"torch.no_grad", "torch.inference_mode"})


def _indexes_container(program: "Program", fn: "FunctionInfo", name: str) -> bool:
    """``fn`` indexes a Python list or tuple, or a module container (``self.branches[idx]`` of an
    ``nn.ModuleList``), with its parameter ``name`` as it is: Python needs the index's value there, so Dynamo
    never makes it dynamic (measured on torch 2.13: ``idx == 0``, ``idx == 1``, ``idx == 2`` fail in turn,
    ``operator.index`` in the container's ``__getitem__``)."""
    return any(isinstance(ev, SubscriptEvent) and ev.function is fn and not ev.store and ev.base is not None
               and (ev.base.kind is Kind.MODULE or ev.base.kind is Kind.SEQUENCE)
               and isinstance(ev.node, cst.Subscript) and len(ev.node.slice) == 1
               and isinstance(ev.node.slice[0].slice, cst.Index)
               and type(ev.node.slice[0].slice.value) is cst.Name and ev.node.slice[0].slice.value.value == name
               for ev in program.events)


def _counts_loop(fn: "FunctionInfo", name: str) -> bool:
    """``fn`` passes its parameter ``name`` to ``range()`` (``for i in range(n)``): Dynamo unrolls the loop,
    so even a symbolic int is made concrete there and guarded on its value (measured on torch 2.13, with
    ``dynamic=True`` or without: ``n_aug == 1``, then ``n_aug == 2`` recompile, and so does each new
    value)."""
    return any(type(n) is cst.Call and type(n.func) is cst.Name and n.func.value == "range"
               and any(type(m) is cst.Name and m.value == name for a in n.args for m in walk(a.value))
               for n in walk(fn.node.body) if fn.owner is None or "range" not in fn.owner.globals)


def _star_varying(program: "Program", fn: "FunctionInfo", params: list[cst.Param], sites: list[_Site],
                  static: bool) -> Iterator[ParameterValues]:
    """``*args`` and ``**kwargs`` of ``fn`` that its calls fill differently: Dynamo guards on the length of
    the tuple and on the keys of the dict it reads (measured on torch 2.13: ``fn(x)``, ``fn(x, t)`` and
    ``fn(x, bias=t)`` fail ``not args``, ``len(args) == 1`` and ``not ___dict_contains('bias', kwargs)`` in
    turn).  Only calls that spread nothing into it (``*rest``, ``**options``) are read."""
    p = fn.node.params
    positional = len(p.posonly_params) + len(p.params) - (1 if fn.is_method else 0)
    named = {prm.name.value for prm in params}
    for star, extra in ((p.star_arg, _extra_positional), (p.star_kwarg, _extra_keywords)):
        if not isinstance(star, cst.Param) or not sites or not _read(fn, star.name.value):
            continue
        passed: dict[tuple[str, Any], _Site] = {}
        for site in sites:
            call = site[0]
            if any(a.star for a in call.args):
                break
            passed.setdefault(extra(call, positional, named), site)
        else:
            if len(passed) >= 2:
                shown = tuple((_where(site, program), _shown(key)) for key, site in passed.items())
                yield ParameterValues(fn, star, frozenset(passed), sites=shown, static=static)


def _extra_positional(call: cst.Call, positional: int, named: set[str]) -> tuple[str, Any]:
    """What a call that spreads nothing puts in ``*args``: its positional arguments past the named ones."""
    given = [a.value for a in call.args if a.keyword is None]
    return "tuple", tuple(_display_element(v) for v in given[positional:])


def _extra_keywords(call: cst.Call, positional: int, named: set[str]) -> tuple[str, Any]:
    """What a call that spreads nothing puts in ``**kwargs``: its keywords that name no parameter."""
    return "dict", tuple((a.keyword.value, _display_element(a.value)) for a in call.args
                         if a.keyword is not None and a.keyword.value not in named)


def _forwarding_sites(program: "Program", site: _Site, params: list[cst.Param]
                      ) -> Iterator[tuple[_Site, list[cst.Param], dict[str, str], dict[tuple[str, Any], str]]]:
    """The calls of the function that makes the call of ``site`` (a wrapper of the module, not a script's own
    statements), when it hands some of its parameters as they are to the parameters ``params`` of its callee
    (``def generate(x, t, k): return sample(x, t, k)``), or an item of one by a literal key (``sample(x,
    params["greedy"])``), or arithmetic of them (``adam(p, step + 1)``): each with the wrapper's parameters,
    the map from those it hands on to the callee's, the map from (parameter, key) to the callee's, and the
    callee's parameters given such arithmetic. Dynamo guards on what reaches the compiled frame, through any
    number of plain Python frames."""
    call, caller, owner = site
    if caller is None or owner is not program or caller.closure is not None:
        return
    wrapper_params = _call_params(caller)
    own = {p.name.value for p in wrapper_params}
    rebound = caller.derived("names bound in the body", body_bindings)
    rename: dict[str, str] = {}
    picks: dict[tuple[str, Any], str] = {}
    derived: dict[str, cst.BaseExpression] = {}
    for name, arg in _bound_arguments(call, params):
        if isinstance(arg, cst.Name) and arg.value in own and arg.value not in rebound:
            rename[arg.value] = name
        elif isinstance(arg, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)) \
                and _arithmetic_of(arg, own - rebound):
            # (`step + 1`, `step >= 2`: computed from what the wrapper is given, value by value)
            derived[name] = arg
        elif isinstance(arg, cst.Subscript) and isinstance(arg.value, cst.Name) and arg.value.value in own \
                and arg.value.value not in rebound and len(arg.slice) == 1 \
                and isinstance(arg.slice[0].slice, cst.Index):
            key = literal_constant(arg.slice[0].slice.value)
            if isinstance(key, str):
                picks[(arg.value.value, key)] = name
    if not rename and not picks and not derived:
        return
    for outer, where in module_call_sites(program, caller):
        if where is not caller:
            yield (outer, where, program), wrapper_params, rename, picks, derived


def _arithmetic_of(node: cst.BaseExpression, names: set[str]) -> bool:
    """``node`` is arithmetic of number literals and of ``names``, one of them at least (``step + 1``), or an
    order comparison of such (``step >= 2``)."""
    def arithmetic(n: cst.BaseExpression) -> bool:
        if type(n) is cst.Name:
            return n.value in names
        if type(n) in (cst.Integer, cst.Float):
            return True
        if type(n) is cst.UnaryOperation:
            return type(n.operator) in (cst.Minus, cst.Plus) and arithmetic(n.expression)
        if type(n) is cst.Comparison and n is node:
            return arithmetic(n.left) and all(
                type(c.operator) in (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual,
                                     cst.Equal, cst.NotEqual) and arithmetic(c.comparator) for c in n.comparisons)
        return type(n) is cst.BinaryOperation and arithmetic(n.left) and arithmetic(n.right)

    return arithmetic(node) and any(type(n) is cst.Name for n in walk(node))


def _changed_in_place(fn: "FunctionInfo", params: list[cst.Param], sites: list[_Site]
                      ) -> dict[str, tuple[_Site, cst.CSTNode]]:
    """The parameters of ``fn`` to which calls pass a container that their caller changes in place between
    two of them (:func:`~dynalint.analysis.in_place_changes.changed_between_calls`), each with the first such
    call and the change."""
    passed: dict[tuple[str, int, str], list[_Site]] = {}
    for site in sites:
        for name, arg in _bound_arguments(site[0], params):
            if isinstance(arg, cst.Name):
                passed.setdefault((name, id(_replayed_caller(site)), arg.value), []).append(site)
    out: dict[str, tuple[_Site, cst.CSTNode]] = {}
    for (name, _, variable), found in passed.items():
        if name in out:
            continue
        change = changed_between_calls(_replayed_caller(found[0]), [call for call, _, _ in found], variable,
                                       _element_reads(fn, name))
        if change is not None:
            out[name] = (found[0], change)
    return out


def _code(node: cst.CSTNode) -> str:
    """The code of ``node`` on one line, shortened as a call is where a message shows it."""
    text = " ".join(cst.Module([]).code_for_node(node).split())
    return text if len(text) <= _SHOWN_CALL else text[:_SHOWN_CALL - 1] + "…"


def _grad_enabled(site: _Site) -> bool:
    """Whether a call runs with grad mode on, as far as its caller shows: not inside ``with
    torch.no_grad():`` or ``torch.inference_mode()`` (or a caller decorated with either). Dynamo guards
    on grad mode, so calls in the two modes run different graphs whatever else they pass."""
    call, caller = site[0], _replayed_caller(site)  # (a script's `with torch.no_grad():` at module level too)
    if any(_grad_off(d.decorator) for d in caller.node.decorators):
        return False
    mode = None  # the innermost `with` around the call that sets grad mode decides (walked outside in)
    for node in walk(caller.node.body, into_scopes=False):
        if isinstance(node, cst.With) and any(n is call for n in walk(node.body, into_scopes=False)):
            for item in node.items:
                if _grad_off(item.item):
                    mode = False
                elif _grad_on(item.item):
                    mode = True
    if mode is False:
        return False
    if site[1] is not None and _mode_set_before(caller.node, call) is False:
        return False
    modes = script_grad_modes(site[2].index) if site[1] is None else {}
    if modes:  # the mode the last `torch.set_grad_enabled(...)` statement before the call set
        order = {id(n): i for i, n in enumerate(walk(site[2].index.module, into_scopes=False))}
        at = order.get(id(call), -1)
        before = [(order[key], mode) for key, mode in modes.items() if order.get(key, -1) < at]
        return max(before)[1] if before else True
    return True


def script_grad_modes(index: "ModuleIndex") -> dict[int, bool]:
    """The ``torch.set_grad_enabled(True)``/``(False)`` statements among a script's own statements that run
    one after the other (at module level, in its ``__main__`` block), by ``id`` of the call, with the mode
    each sets: grad mode is then known at each of the script's calls (measured on torch 2.13: a compiled call
    after ``torch.set_grad_enabled(False)`` recompiles on ``grad_mode``).  Empty when there is none, or when
    the module sets the mode otherwise as well (a statement in a function, a branch or a loop, an argument not
    a literal): see :func:`_sets_grad_mode_for_good`."""
    text = index.source
    if text is not None and "set_grad_enabled" not in text:
        return {}
    found = _statement_grad_sets(index)
    top: dict[int, bool] = {}
    for stmt in _straight_statements(index.module.body):
        for small in stmt.body if type(stmt) is cst.SimpleStatementLine else ():
            value = small.value if type(small) is cst.Expr else None
            if value is not None and _sets_grad_mode(value) and len(value.args) == 1 \
                    and dotted_name(value.args[0].value) in ("True", "False") and not value.args[0].keyword:
                top[id(value)] = dotted_name(value.args[0].value) == "True"
    return top if top and set(top) == {id(n) for n in found} else {}


def _straight_statements(body: "list | tuple") -> Iterator[cst.CSTNode]:
    """The module's statements that run one after the other, the body of its ``__main__`` block included."""
    for stmt in body:
        if type(stmt) is cst.If and stmt.orelse is None and is_main_guard(stmt.test):
            yield from _straight_statements(stmt.body.body)
        else:
            yield stmt


def grad_mode_differs(owner: "Program", caller: "FunctionInfo", first: cst.Call, then: cst.Call) -> bool:
    """Two calls in ``caller`` (of ``owner``'s module), one run with grad mode on and the other under no-grad
    (see :func:`_grad_enabled`): a compiled module they call recompiles once for the grad mode, whatever else
    changed between them (measured on torch 2.13: `.eval()` and `torch.no_grad()` switched at one call make
    one recompile, which Dynamo names after the grad mode)."""
    a, b = (first, caller, owner), (then, caller, owner)
    return not (_grad_mode_set(a) or _grad_mode_set(b)) and _grad_enabled(a) != _grad_enabled(b)


def _mode_set_before(fn: cst.FunctionDef, call: cst.Call) -> bool | str | None:
    """The mode the last ``torch.set_grad_enabled(...)`` statement of ``fn`` before ``call`` sets (in the
    order of its body): True or False for a literal, ``"unknown"`` for another argument, None without one."""
    last: cst.Call | None = None
    for n in walk(fn.body, into_scopes=False):
        if n is call:
            break
        if _sets_grad_mode(n):
            last = n
    if last is None:
        return None
    arg = last.args[0].value if last.args else None
    if not isinstance(arg, cst.Name):
        return "unknown"
    return {"True": True, "False": False}.get(arg.value, "unknown")


def _grad_mode_set(site: _Site) -> bool:
    """A call inside ``with torch.set_grad_enabled(...):`` (or in a caller decorated with it), or after a
    ``torch.set_grad_enabled(mode)`` statement of its caller: it runs in the mode the argument says, not known
    statically."""
    call, caller = site[0], _replayed_caller(site)
    if site[1] is not None and _mode_set_before(caller.node, call) == "unknown":
        return True
    if any(_sets_grad_mode(d.decorator) for d in caller.node.decorators):
        return True
    return any(isinstance(node, cst.With) and any(_sets_grad_mode(item.item) for item in node.items)
               and any(n is call for n in walk(node.body, into_scopes=False))
               for node in walk(caller.node.body, into_scopes=False))


def _sets_grad_mode(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Call and dotted_name(node.func) == "torch.set_grad_enabled"


def _sets_grad_mode_for_good(index: "ModuleIndex") -> bool:
    """The module calls ``torch.set_grad_enabled(...)`` as a statement (not as a ``with`` item or a decorator,
    which restore the mode after their block) other than the script statements :func:`script_grad_modes`
    follows: grad mode may be off for any call after it."""
    text = index.source  # a module that calls it has its name in its text: no walk otherwise
    if text is not None and "set_grad_enabled" not in text:
        return False
    return bool(_statement_grad_sets(index)) and not script_grad_modes(index)


def _statement_grad_sets(index: "ModuleIndex") -> list[cst.Call]:
    """The calls of ``torch.set_grad_enabled(...)`` in the module that are neither a ``with`` item nor a
    decorator."""
    scoped: set[int] = set()
    calls = []
    for n in walk(index.module):  # (a parent comes before its children: a `with` before its items)
        if type(n) is cst.With:
            scoped.update(id(item.item) for item in n.items)
        elif type(n) is cst.FunctionDef:
            scoped.update(id(d.decorator) for d in n.decorators)
        elif _sets_grad_mode(n):
            calls.append(n)
    restored = {id(n) for fn in index.all_functions for n in _restored_grad_sets(fn.node)}
    return [n for n in calls if id(n) not in scoped and id(n) not in restored]


def _restored_grad_sets(fn: cst.FunctionDef) -> list[cst.Call]:
    """The ``torch.set_grad_enabled(...)`` calls of a function (its nested functions aside) whose last one
    turns grad mode back on (``True``) or restores a mode it saved (a name): the function leaves the mode
    as it found it on, and a call outside it runs in that mode."""
    calls = [n for n in walk(fn.body, into_scopes=False) if _sets_grad_mode(n)]
    if not calls:
        return []
    last = calls[-1].args[0].value if calls[-1].args else None
    restores = isinstance(last, cst.Name) and (last.value == "True" or last.value not in ("False", "None"))
    return calls if restores else []


def _grad_on(node: cst.BaseExpression) -> bool:
    """``torch.enable_grad()``, which turns grad mode back on inside a no-grad block."""
    return isinstance(node, cst.Call) \
        and dotted_name(node.func) in ("torch.enable_grad", "torch.autograd.enable_grad")


def _grad_off(node: cst.BaseExpression) -> bool:
    """``torch.no_grad()`` / ``torch.inference_mode()`` (or the bare decorator name)."""
    if isinstance(node, cst.Call):
        node = node.func
    return dotted_name(node) in _GRAD_OFF


def _distinct_keys(program: "Program", values: "Iterable[Any]") -> list[tuple[str, Any]]:
    """The keys (as :func:`_shape_of` gives them) of the values a replay passes, each once, in the order first
    passed: two or more are values Dynamo guards on apart.  A flag drawn at random at each iteration gives
    both bools when enough draws make both all but sure (see
    :func:`~dynalint.analysis.loop_arguments.both_drawn`)."""
    values = list(values)
    keys = [k for k in (_key_of(program, v) for v in values) if k is not None]
    drawn = [v for v in values if isinstance(v, Drawn)]
    if drawn and len(set(drawn)) == 1 and both_drawn(len(drawn), drawn[0].p):
        keys += [("bool", True), ("bool", False)]  # (a flag drawn at random at each iteration: both, surely)
    return list(dict.fromkeys(keys))


def _key_of(program: "Program", value: Any) -> tuple[str, Any] | None:
    """A replayed value's key, as :func:`_shape_of` keys a literal (and :func:`_record_of` an instance of a
    record class); None when not known."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return (type(value).__name__, value)
    if value is TENSOR:
        return ("tensor", None)
    if isinstance(value, dict):
        if len(value) > _MAX_ITEMS or not all(isinstance(k, (bool, int, float, str)) for k in value):
            return ("dict", None)
        return ("dict", tuple((k, _element_key(v)) for k, v in value.items()))
    if isinstance(value, Built):
        return _record_key(program, value.func, [(None, _key_of(program, v)) for v in value.args]
                           + [(k, _key_of(program, v)) for k, v in value.keywords])
    if isinstance(value, (list, tuple)):
        if len(value) > _MAX_ITEMS:
            return (type(value).__name__, None)
        return (type(value).__name__, tuple(_element_key(v) for v in value))
    return None


def _element_key(value: Any) -> tuple[str, Any]:
    """A replayed container element's key, as :func:`_items` keys a literal element."""
    return (type(value).__name__, value) if isinstance(value, (bool, int, float, str)) or value is None \
        else _TENSOR if value is TENSOR else _OTHER


_SHOWN_VALUES = 3
"""Values of a loop a message lists."""


def _in_turn(keys: list[tuple[str, Any]]) -> str:
    """What a loop passes, value after value (``passes `2`, `3` in turn``)."""
    shown = ", ".join(_shown(k) for k in keys[:_SHOWN_VALUES])
    return f"{shown}{', …' if len(keys) > _SHOWN_VALUES else ''} in turn"


def _compiled_itself(fn: "FunctionInfo") -> bool:
    """A function of another module that runs compiled code when called (its calls are inlined)."""
    return fn.compile_decorated or (fn.name == "forward" and fn.cls is not None and fn.cls.is_module)


def _static_decorator(fn: "FunctionInfo") -> bool:
    """``@torch.compile(dynamic=False)`` (every new number or shape recompiles)."""
    for d in fn.node.decorators:
        if isinstance(d.decorator, cst.Call) and _dynamic_false(d.decorator):
            return True
    return False


def _dynamic_false(call: cst.Call) -> bool:
    return any(a.keyword is not None and a.keyword.value == "dynamic" and isinstance(a.value, cst.Name)
               and a.value.value == "False" for a in call.args)


def _bound_arguments(call: cst.Call, params: list[cst.Param]) -> Iterator[tuple[str, cst.BaseExpression]]:
    """(parameter name, argument) for the arguments of ``call`` up to the first ``*``/``**``."""
    names = [p.name.value for p in params]
    position = 0
    for arg in call.args:
        if arg.star:
            return
        if arg.keyword is not None:
            if arg.keyword.value in names:
                yield arg.keyword.value, arg.value
            continue
        if position < len(names):
            yield names[position], arg.value
        position += 1


def _shape_of(node: cst.BaseExpression) -> tuple[str, Any] | None:
    """What Dynamo guards on in an argument known from its syntax: a literal's type and value, or a
    list or tuple display; None when not known."""
    if isinstance(node, cst.Name) and node.value == "None":
        return ("NoneType", None)
    if isinstance(node, (cst.List, cst.Tuple)):
        items = _items(node)
        return ("list" if isinstance(node, cst.List) else "tuple", None if items is None else tuple(items))
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply) \
            and isinstance(node.left, cst.List) and isinstance(node.right, cst.Integer):
        items = _items(node.left)  # `[t] * 3`: the display repeated
        count = literal_value(node.right)
        return ("list", None if items is None or not 0 <= count <= _MAX_ITEMS else tuple(items) * count)
    if isinstance(node, cst.Dict):
        return ("dict", _entries(node))
    device = _device(node)
    if device is not None:
        return ("device", device)
    dotted = dotted_name(node) if type(node) is cst.Attribute else None
    if dotted is not None and dotted.startswith("torch.") and dotted[6:] in K.TORCH_DTYPE_NAMES:
        # `torch.float16`: Dynamo guards on a dtype argument by equality (`dtype == torch.float64`)
        return ("dtype", K.TORCH_DTYPE_ALIASES.get(dotted[6:], dotted[6:]))
    const = literal_constant(node)
    if const is NOT_LITERAL and isinstance(node, (cst.BinaryOperation, cst.UnaryOperation)):
        folded = constant(node)  # arithmetic of number literals (`1 + 0.5`)
        return None if folded is UNKNOWN else (type(folded).__name__, folded)
    return None if const is NOT_LITERAL else (type(const).__name__, const)


_MAX_ITEMS = 64
"""Elements of a container display compared one by one; a longer one is known by its kind only."""


def _record_of(program: "Program", node: cst.BaseExpression) -> tuple[str, Any] | None:
    """``Cfg(scale=3.0)`` of a dataclass or NamedTuple of the checked code whose own fields the call sets
    (no ``__init__`` or ``__post_init__`` of its own) with literals: ``("record", ((field, value key),
    ...))``, the class first (as ``__class__``) and each field's default where the call leaves it out.
    Dynamo guards on the class and on each field the compiled function reads (measured on torch 2.13:
    ``Cfg()`` then ``Cfg(scale=3.0)`` recompiles on ``cfg.scale == 2.0``).  None when not known field by
    field."""
    if type(node) is not cst.Call or any(a.star for a in node.args):
        return None
    given = [(a.keyword.value if a.keyword is not None else None, _shape_of(a.value)) for a in node.args]
    return _record_key(program, node.func, given)


def _record_key(program: "Program", func: cst.BaseExpression, given: list[tuple[str | None, Any]]
                ) -> tuple[str, Any] | None:
    """What :func:`_record_of` gives for a call of ``func`` whose arguments (keyword or None, then what
    :func:`_shape_of` gives for the value, None when not known) are ``given``."""
    made = program.names.static_value_of(func)
    cls = made.cls if made is not None and made.is_class else None
    if cls is None:
        return None
    stored = _stored_parameters(cls) if not program.classes.is_record(cls) else None
    if stored is not None:
        params = [prm.name.value for prm in cls.methods["__init__"].node.params.params[1:]]
        defaults = {prm.name.value: prm for _, prm in stored}
        order = [(attr, prm.name.value) for attr, prm in stored]
    elif not program.classes.is_record(cls) \
            or any(cls.find_method(m) is not None for m in ("__init__", "__post_init__", "__new__")):
        return None
    else:
        params = list(dict.fromkeys(f for c in reversed(list(cls.mro())) for f in c.field_annotations))
        order = [(f, f) for f in params]
    keys: dict[str, Any] = {}
    for i, (keyword, key) in enumerate(given):
        if keyword is None and i < len(params):
            keys[params[i]] = key
        elif keyword is not None and keyword in params:
            keys[keyword] = key
        else:
            return None
    content: list[tuple[str, tuple[str, Any]]] = [("__class__", ("class", cls.name))]
    for attr, param in order:
        if param in keys:
            key = keys[param]
        else:  # its default
            expr = defaults[param].default if stored is not None else \
                next((c.body_assigns[param] for c in cls.mro() if param in c.body_assigns), None)
            key = _shape_of(expr) if expr is not None else None
        content.append((attr, key if key is not None and key[0] not in ("list", "tuple", "dict") else _OTHER))
    return ("record", tuple(content))


def _stored_parameters(cls: "ClassInfo") -> list[tuple[str, cst.Param]] | None:
    """``(attribute, parameter)`` of each ``self.<attribute> = <parameter>`` of a plain class's ``__init__``,
    when that is all it does: a class of the checked code with no base, no other way to make or change its
    instances (``__new__``, ``__setattr__``), and parameters that are plain ones (a ``*`` or ``**`` is none).
    Its instances are records of those parameters (measured on torch 2.13: ``Cfg(2.0)`` then ``Cfg(-1.0)``
    recompiles on ``cfg.scale == 2.0`` where the compiled function reads ``cfg.scale``)."""
    init = cls.methods.get("__init__")
    p = init.node.params if init is not None else None
    if cls.is_module or cls.bases and list(cls.bases) != ["object"] or p is None or p.posonly_params \
            or p.kwonly_params or isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None \
            or any(m in cls.methods for m in ("__new__", "__setattr__", "__post_init__")) or not p.params:
        return None
    me, params = p.params[0].name.value, {prm.name.value: prm for prm in p.params[1:]}
    out: list[tuple[str, cst.Param]] = []
    for stmt in init.node.body.body:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString):
            continue  # the docstring
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            return None
        target, value = small.targets[0].target, small.value
        pairs = [(t.value, v.value) for t, v in zip(target.elements, value.elements)] \
            if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple) \
            and len(target.elements) == len(value.elements) \
            and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)) \
            else [(target, value)]  # `self.a, self.b = a, b`
        for target, value in pairs:
            if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                    and target.value.value == me and isinstance(value, cst.Name) and value.value in params):
                return None
            if target.attr.value in cls.body_assigns or target.attr.value in cls.methods:
                return None  # a descriptor or property of the class stores it its own way
            out.append((target.attr.value, params[value.value]))
    return out or None


def _device(node: cst.BaseExpression) -> tuple[str, int | None] | None:
    """``(type, index)`` of ``torch.device("cuda:1")`` or ``torch.device("cuda", 1)`` written with
    literals; None otherwise. Dynamo guards on a device argument by equality (measured on torch 2.13:
    ``device == device(type='cpu')``), and a device is never equal to a string, so a string at one
    call and a device at another recompile like two strings do."""
    if not isinstance(node, cst.Call) or dotted_name(node.func) != "torch.device" \
            or any(a.keyword is not None or a.star for a in node.args) or not 1 <= len(node.args) <= 2:
        return None
    spec, *rest = (literal_constant(a.value) for a in node.args)
    if not isinstance(spec, str) or any(not isinstance(i, int) or isinstance(i, bool) for i in rest):
        return None
    kind, _, index = spec.partition(":")
    if index and (rest or not index.isdigit()):
        return None
    return (kind, int(index) if index else (rest[0] if rest else None))

_OTHER = ("?", None)
"""An element that is not a literal (a tensor, a name): Dynamo guards what it is, not known here."""


def _items(node: cst.List | cst.Tuple) -> list[tuple[str, Any]] | None:
    """The keys of a display's elements (a literal's type and value, :data:`_OTHER` for the rest);
    None when a ``*`` spreads into it or it is too long to compare."""
    if len(node.elements) > _MAX_ITEMS or any(isinstance(e, cst.StarredElement) for e in node.elements):
        return None
    return [_display_element(e.value) for e in node.elements]


def _display_element(node: cst.BaseExpression) -> tuple[str, Any]:
    """The key of an element of a list, tuple or dict display: a literal's type and value, ``None``, a tensor
    a torch function makes, :data:`_OTHER` for the rest."""
    const = literal_constant(node)
    return _TENSOR if _made_tensor(node) else _NONE_KEY if is_none(node) \
        else _OTHER if const is NOT_LITERAL else (type(const).__name__, const)


_NONE_KEY = ("NoneType", None)
_TENSOR = ("tensor", None)
"""An element a torch function makes (``torch.randn(2)``): Dynamo guards its type (``None`` at another call
fails it), not its value."""


def _made_tensor(node: cst.BaseExpression) -> bool:
    """``node`` is a call of a torch function that makes a tensor from sizes and numbers (``torch.ones(8)``)."""
    return isinstance(node, cst.Call) and K.makes_tensor_from_sizes(dotted_name(node.func))


def _entries(node: cst.Dict) -> tuple[tuple[Any, tuple[str, Any]], ...] | None:
    """``(key, value key)`` of a dict display whose keys are all literals; None otherwise."""
    if len(node.elements) > _MAX_ITEMS:
        return None
    out = []
    for e in node.elements:
        key = literal_constant(e.key) if isinstance(e, cst.DictElement) else NOT_LITERAL
        if key is NOT_LITERAL:
            return None
        out.append((key, _display_element(e.value)))
    return tuple(out)


def _shown(key: tuple[str, Any]) -> str:
    kind, value = key
    if kind in ("list", "tuple", "dict"):
        if value is None:
            return f"a {kind}"
        if kind == "dict":
            return "`{" + ", ".join(f"{k!r}: {_element(v)}" for k, v in value) + "}`"
        shown = ", ".join(_element(v) for v in value)
        return f"`[{shown}]`" if kind == "list" else f"`({shown}{',' if len(value) == 1 else ''})`"
    if kind == "record":
        fields = dict(value)
        cls = fields.pop("__class__")[1]
        return f"`{cls}(" + ", ".join(f"{k}={_element(v)}" for k, v in fields.items()) + ")`"
    if kind == "tensor":
        return "a tensor"
    if kind == "device":
        return f"`torch.device({value[0]!r}{'' if value[1] is None else f', {value[1]}'})`"
    if kind == "dtype":
        return f"`torch.{value}`"
    return f"`{value!r}`"


def _kind_only(key: tuple[str, Any], what: str) -> str:
    """What a call passes, naming a container by its kind alone (a list against a tuple)."""
    return what.replace(_shown(key), f"a {key[0]}") if key[0] in ("list", "tuple", "dict") else what


def _element(key: tuple[str, Any]) -> str:
    return "…" if key == _OTHER else "a tensor" if key == _TENSOR else repr(key[1])


def _is_tensor(site: _Site, arg: cst.BaseExpression) -> bool:
    """Whether the caller (a script's statements at module level as well) passes a tensor at ``arg`` (its
    evaluation says so)."""
    value = _passed_value(site, arg)
    return value is not None and value.kind is Kind.TENSOR and not value.maybe_none


def _other_than_none(value: "Value | None") -> tuple[tuple[str, Any], str] | None:
    """The key and description of what a caller surely passes where another call passes ``None``, when
    ``value`` (its evaluation) is of a kind Dynamo guards apart from ``None`` (measured on torch 2.13): a
    tensor; an object of a class of the checked code (``Cache()``: ``cache is None`` fails); a list, tuple or
    dict (``out, past = m(x)``, then ``m(x, past)``: ``past is None`` fails, also with ``dynamic=True``)."""
    if value is None or value.maybe_none:
        return None
    if value.kind is Kind.TENSOR:
        return ("tensor", None), "a tensor"
    if value.choices:
        return None
    if value.cls is not None and not value.is_class and value.kind in (Kind.UNKNOWN, Kind.MODULE):
        return ("object", value.cls.name), f"a `{value.cls.name}`"
    if value.is_mapping:
        return ("dict", None), "a dict"
    if value.kind is Kind.SEQUENCE:
        return (("tuple", None), "a tuple") if value.qualname == "builtins.tuple" else \
            (("list", None), "a list") if value.qualname == "builtins.list" else (("list", None), "a list or tuple")
    return None


def _passed_value(site: _Site, arg: cst.BaseExpression) -> "Value | None":
    from dynalint.analysis.interprocedural import MAX_CALL_DEPTH
    from dynalint.analysis.number_callers import argument_values

    return argument_values(site[2], _replayed_caller(site), [arg], MAX_CALL_DEPTH).get(id(arg))


def _none_then_tensor(site: _Site, arg: cst.BaseExpression, fn: "FunctionInfo") -> bool:
    """``prev = None`` before a loop that calls ``f(x, prev)`` at every iteration and then rebinds
    ``prev`` to a tensor in the same body: the first call passes ``None``, the next ones a tensor (a
    warm start carried from one iteration to the next).  Only plain assignments bind the name, the
    call and the rebinding run on every iteration (no ``if`` or inner loop around them), and the
    rebinding comes after the call, or is that call's own statement taking an item of what ``fn``
    returns (``out, state = f(x, state)``: a state carried by the compiled function itself)."""
    call, owner = site[0], site[2]
    caller = _replayed_caller(site)  # (a script's statements at module level too)
    loop = _repeating_loop(site)
    if loop is None or not isinstance(arg, cst.Name) \
            or not (_every_iteration(loop, call) and _only_assigned(caller, arg.value)):
        return False
    bindings = [n for n in walk(caller.node.body, into_scopes=False) if isinstance(n, cst.Assign)
                and any(position_bound(t.target, arg.value) is not None for t in n.targets)]
    inside = [n for n in bindings if encloses(loop.body, n)]
    outside = [n for n in bindings if n not in inside]
    first = _assigned_value(outside[0], arg.value) if len(outside) == 1 else None
    if len(inside) != 1 or not (isinstance(first, cst.Name) and first.value == "None"):
        return False
    order = {id(n): i for i, n in enumerate(walk(caller.node.body, into_scopes=False))}
    rebound = inside[0]
    if rebound.value is call and len(rebound.targets) == 1 and order[id(outside[0])] < order[id(loop)]:
        position = position_bound(rebound.targets[0].target, arg.value)
        return position is not None and _returns_item(fn, position)
    later = _assigned_value(rebound, arg.value)
    if later is None or not (order[id(outside[0])] < order[id(loop)] and order[id(rebound)] > order[id(call)]
                             and _every_iteration(loop, rebound)):
        return False
    if _never_none(later):
        return True
    from dynalint.analysis.interprocedural import MAX_CALL_DEPTH
    from dynalint.analysis.number_callers import argument_values

    value = argument_values(owner, caller, [later], MAX_CALL_DEPTH).get(id(later))
    return value is not None and value.kind is Kind.TENSOR and not value.maybe_none


def _assigned_value(assign: cst.Assign, name: str) -> cst.BaseExpression | None:
    """What ``assign`` binds ``name`` to: its value, or the item of a display it unpacks (``prev, state = None,
    None``); None when not written out."""
    if len(assign.targets) != 1:
        return None
    target, value = assign.targets[0].target, assign.value
    if isinstance(target, cst.Name):
        return value if target.value == name else None
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
            and len(target.elements) == len(value.elements) \
            and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        return next((v.value for t, v in zip(target.elements, value.elements)
                     if isinstance(t.value, cst.Name) and t.value.value == name), None)
    return None


def _returns_item(fn: "FunctionInfo", position: int) -> bool:
    """Every ``return`` of ``fn`` (not of a function nested in it) gives a tuple written out whose item at
    ``position`` is never ``None`` (:func:`_never_none`, or a ``torch`` function's result); for ``position``
    -1, a value that is never ``None`` itself (``return chunk + prev``: a state handed back whole)."""
    returns = [n for n in walk(fn.node.body, into_scopes=False) if isinstance(n, cst.Return)]
    if position == -1:
        return bool(returns) and all(r.value is not None and _not_none_item(r.value) for r in returns)
    return bool(returns) and all(
        isinstance(r.value, cst.Tuple) and len(r.value.elements) > position
        and not isinstance(r.value.elements[position], cst.StarredElement)
        and _not_none_item(r.value.elements[position].value) for r in returns)


def _not_none_item(node: cst.BaseExpression) -> bool:
    """An item of a returned tuple that is never ``None``: :func:`_never_none`, or a ``torch`` function's
    result."""
    return _never_none(node) or (isinstance(node, cst.Call)
                                 and (dotted_name(node.func) or "").startswith("torch."))


def _never_none(node: cst.BaseExpression) -> bool:
    """A slice (``flows[-1][:, ::4]``: of a tensor, a tensor; of a list, a list) or arithmetic: never
    ``None``, so the guard a ``None`` argument installs fails on it."""
    return isinstance(node, cst.BinaryOperation) or (isinstance(node, cst.Subscript) and any(
        isinstance(e.slice, cst.Slice) for e in node.slice))


def _every_iteration(loop: cst.For, node: cst.CSTNode) -> bool:
    """``node`` runs on every iteration of ``loop``: no ``if``, loop, ``try`` or early exit between."""
    exits = (cst.Break, cst.Continue, cst.Return, cst.Raise)
    if any(isinstance(n, exits) for n in walk(loop.body, into_scopes=False)):
        return False
    for stmt in walk(loop.body, into_scopes=False):
        if isinstance(stmt, (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match, cst.IfExp,
                             cst.BooleanOperation, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp,
                             cst.GeneratorExp)) and encloses(stmt, node):
            return False
    return True


def _only_assigned(caller: "FunctionInfo", name: str) -> bool:
    """``name`` is bound in ``caller`` by plain ``name = value`` statements only."""
    for n in walk(caller.node, into_scopes=False):
        if isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.AsName)):
            bound = getattr(n, "target", None) or getattr(n, "name", n)
            if any(isinstance(m, cst.Name) and m.value == name for m in walk(bound)):
                return False
        if isinstance(n, (cst.Global, cst.Nonlocal)) and any(a.name.value == name for a in n.names):
            return False
        if isinstance(n, cst.Param) and n.name.value == name:
            return False
    return True


def _contents_guarded(fn: "FunctionInfo", name: str, values: frozenset[tuple[str, Any]]) -> bool:
    """Whether two of the container displays passed to ``name`` differ where Dynamo guards them
    (measured on torch 2.13): in length (or a dict's keys) when the function reads the container at
    all, or in a literal element that it reads (``size[0]``, ``cfg["beta"]``; any element when it
    uses the container otherwise than by ``len`` or a literal subscript). A tensor's or a name's
    value inside is not compared (its count is); a display not known element by element decides
    nothing."""
    contents = [(kind, value) for kind, value in values]
    if any(c is None for _, c in contents):
        return False
    record = all(kind == "record" for kind, _ in contents)
    reads = _element_reads(fn, name, fields=record)
    if reads is None:
        return False
    if record and reads is not True:
        reads = reads | {"__class__"}  # (another class fails the type guard, whatever is read)
    for i, a in enumerate(contents):
        for b in contents[i + 1:]:
            if _guarded_apart(_positions(*a), _positions(*b), reads):
                return True
    return False


def _positions(kind: str, content: tuple) -> dict[Any, tuple[str, Any]]:
    """Index or key -> element key, of a list's, tuple's or dict's content."""
    return dict(content) if kind in ("dict", "record") else dict(enumerate(content))


def _guarded_apart(a: dict[Any, tuple[str, Any]], b: dict[Any, tuple[str, Any]], reads: set[Any] | bool) -> bool:
    """Whether contents ``a`` and ``b`` differ in what Dynamo guards, given the elements read."""
    if a.keys() != b.keys():
        return True  # another length (or other keys): a length or keys guard
    for at, left in a.items():
        right = b[at]
        if _OTHER in (left, right) or left == right:
            continue
        if reads is True or at in reads or (isinstance(at, int) and at - len(a) in reads):
            return True
    return False


def _mentions(fn: "FunctionInfo", name: str, parents: dict[int, cst.CSTNode], *,
              into_scopes: bool = True) -> Iterator[tuple[cst.Name, cst.CSTNode | None]]:
    """Each use of the variable ``name`` in ``fn``'s body (not an attribute called so, ``x.name``), with
    its parent."""
    for n in walk(fn.node.body, into_scopes=into_scopes):
        if isinstance(n, cst.Name) and n.value == name:
            parent = parents.get(id(n))
            if not (isinstance(parent, cst.Attribute) and parent.attr is n):
                yield n, parent


def _element_reads(fn: "FunctionInfo", name: str, fields: bool = False) -> set[Any] | bool | None:
    """What ``fn`` reads of its container parameter ``name``: the literal indices and keys it
    subscripts (``set``), with ``fields`` the attributes it reads of a record (``cfg.scale``), True when it
    uses it otherwise (iterates, passes it on: every element), None when it never mentions it.
    ``len(name)`` reads its length only."""
    parents = parent_map(fn.node)
    found: set[Any] = set()
    mentioned = False
    for n, parent in _mentions(fn, name, parents):
        mentioned = True
        if fields and isinstance(parent, cst.Attribute) and parent.value is n \
                and not isinstance(parents.get(id(parent)), cst.Call):
            found.add(parent.attr.value)
            continue
        if isinstance(parent, cst.Subscript) and parent.value is n and len(parent.slice) == 1 \
                and isinstance(parent.slice[0].slice, cst.Index):
            index = literal_constant(parent.slice[0].slice.value)
            if index is not NOT_LITERAL and not isinstance(index, (bool, float)):
                found.add(index)
                continue
        call = parents.get(id(parent)) if isinstance(parent, cst.Arg) else None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "len" \
                and len(call.args) == 1:
            continue
        return True
    return found if mentioned else None


def _read(fn: "FunctionInfo", name: str) -> bool:
    """Whether the body of ``fn`` mentions its parameter ``name`` at all."""
    return any(isinstance(n, cst.Name) and n.value == name for n in walk(fn.node.body))


def _where(site: _Site, program: "Program") -> str:
    call, caller, owner = site
    return site_label(program, owner, call, caller)


_SHOWN_CALL = 40
"""Characters of a call's code a message shows."""


def site_label(program: "Program", owner: "Program", node: cst.CSTNode, caller: "FunctionInfo | None") -> str:
    """Where ``node`` (in ``caller``, of the module of ``owner``) is, seen from the module ``program``
    analyses: ```run(x, 1.0)` in `main``` in that module (its text, not its line: an edit elsewhere
    moves lines without analysing the finding again), with ```module` line N`` in another (by its
    dotted name: the same whatever the directory the check runs from)."""
    from dynalint.core.positions import node_ranges

    text = _code(node)
    where = f"`{text}` in `{caller.name}`" if caller is not None and caller.name != TOP_LEVEL \
        else f"`{text}` at module level"
    if owner is program:
        return where
    idx = owner.index
    line = node_ranges(idx.module, idx.text, [node])[id(node)].line
    return f"{where}, `{idx.name}` line {line}"


def _instance_calls(idx: "ModuleIndex", compiled: set[int]) -> dict[str, list[tuple[cst.Call, "FunctionInfo"]]]:
    """Class name -> the calls ``obj(...)`` of a local ``obj = ClassName(...)`` in functions that are not
    compiled, in the order of the module's call sites."""
    instances = _instances_by_caller(idx, compiled)
    out: dict[str, list[tuple[cst.Call, FunctionInfo]]] = {}
    for sites in idx.call_sites.values():
        for call, caller in sites:
            if caller is not None and isinstance(call.func, cst.Name):
                cls = instances.get(id(caller), {}).get(call.func.value)
                if cls is not None:
                    out.setdefault(cls, []).append((call, caller))
    return out


def _instances_by_caller(idx: "ModuleIndex", compiled: set[int]) -> dict[int, dict[str, str]]:
    """For each function that is not compiled: local names bound to ``ClassName(...)`` of this file."""
    out: dict[int, dict[str, str]] = {}
    for fn in idx.all_functions:
        if id(fn) in compiled:
            continue
        bound: dict[str, str] = {}
        for n in state_nodes(fn.node):  # the assignments among them, in the order of a walk of the body
            if type(n) is cst.Assign and isinstance(n.value, cst.Call) and isinstance(n.value.func, cst.Name) \
                    and n.value.func.value in idx.classes:
                for t in n.targets:
                    if isinstance(t.target, cst.Name):
                        bound[t.target.value] = n.value.func.value
        if bound:
            out[id(fn)] = bound
    return out


_PATCH = "torch._dynamo.config.patch"


def _compiled_by(value: cst.BaseExpression, call: cst.Call, idx: "ModuleIndex") -> bool:
    """``value`` is the compile call, or that call wrapped by ``torch._dynamo.config.patch(...)(...)``
    (which calls it with the same arguments)."""
    if value is call:
        return True
    return isinstance(value, cst.Call) and len(value.args) == 1 and value.args[0].value is call \
        and not value.args[0].star and isinstance(value.func, cst.Call) \
        and idx.resolve_expr(value.func.func) == _PATCH


def _handle_calls(idx: "ModuleIndex", name: str) -> Iterator[tuple[cst.Call, "FunctionInfo | None"]]:
    """The calls of a compiled handle: ``name(...)``, or ``obj.attr(...)`` for the dotted ``obj.attr``."""
    owner, _, attr = name.rpartition(".")
    for call, caller in idx.call_sites.get(attr, ()):
        func = call.func
        if not owner and isinstance(func, cst.Name) or owner and isinstance(func, cst.Attribute) \
                and isinstance(func.value, cst.Name) and func.value.value == owner and func.attr.value == attr:
            yield call, caller


def _handed_calls(idx: "ModuleIndex", name: str, scope: "FunctionInfo | None"
                  ) -> Iterator[tuple[cst.Call, "FunctionInfo"]]:
    """The calls a module-level function makes of its parameter to which a call in ``scope`` passes the
    compiled handle ``name`` as it is (``drive(step_c, x)`` with ``def drive(step_fn, x): ...
    step_fn(x, i)``): they run the compiled function, with the arguments the function gives it."""
    for fn in idx.functions.values():
        params = fn.param_names()
        for call, caller in idx.call_sites.get(fn.name, ()):
            if type(call.func) is not cst.Name or (scope is not None and caller is not scope):
                continue
            for position, arg in enumerate(call.args):
                if arg.star or not (type(arg.value) is cst.Name and arg.value.value == name):
                    continue
                param = arg.keyword.value if arg.keyword is not None else \
                    params[position] if position < len(params) else None
                if param is not None and param not in fn.derived("names bound in the body", body_bindings):
                    yield from ((c, fn) for c, where in idx.call_sites.get(param, ())
                                if where is fn and type(c.func) is cst.Name)


def _immediate_calls(program: "Program") -> list[tuple[cst.Call, "FunctionInfo | None", "FunctionInfo"]]:
    """``(call, scope, entry)`` for each call of what a ``torch.compile(target)`` returned, made at once
    (``torch.compile(model)(x)``): it runs ``entry`` compiled, with the graphs every handle of it shares."""
    idx = program.index
    out = []
    for call, where in idx.compile_targets:
        target = program.entry_points.compile_target(call, where)
        if target is None or target[0].owner is not idx:
            continue
        scope = where.node.body if where is not None else idx.module
        out.extend((n, where, target[0]) for n in walk(scope, into_scopes=False)
                   if type(n) is cst.Call and n.func is call)
    return out


def _compiled_handles(program: "Program"
                      ) -> list[tuple[str, "FunctionInfo | None", "FunctionInfo", bool, set[int] | None]]:
    """``(name, scope, entry, static, reached)`` for ``name = torch.compile(target)`` (or ``obj.name = ...``,
    with ``name`` the dotted ``obj.name``): calls of ``name`` in ``scope`` (a function, or None for the
    module) run ``entry`` compiled (``static``: with ``dynamic=False``); where the scope binds the name more
    than once (``opt = torch.compile(f); opt(x); opt = torch.compile(g); opt(y)``), only the calls this
    binding reaches do (``reached``, by ``id``; None: every call, see :func:`binding_reach`)."""
    idx = program.index
    out = []
    for call, where in idx.compile_targets:
        target = program.entry_points.compile_target(call, where)
        # (`for fn in (f, g): cf = torch.compile(fn)`: the calls of `cf` run each function of the table)
        targets = [target[0]] if target is not None else [
            fn for fn, _ in program.entry_points.loop_targets(call.args[0].value, where)] \
            if call.args and call.args[0].keyword is None else []
        scope = where.node.body if where is not None else idx.module
        for entry in (fn for fn in targets if fn.owner is idx):
            for n in walk(scope, into_scopes=False):
                if isinstance(n, cst.Assign) and _compiled_by(n.value, call, idx) and len(n.targets) == 1:
                    bound = n.targets[0].target
                    if isinstance(bound, cst.Name):
                        reach = binding_reach(scope, bound.value)
                        several = reach is not None and len(reach) > 1
                        reached = {id(c) for c in reach.get(id(bound), ())} \
                            if several else None  # type: ignore[union-attr]
                        out.append((bound.value, where, entry, _dynamic_false(call), reached))
                    elif isinstance(bound, cst.Attribute) and isinstance(bound.value, cst.Name) \
                            and not _on_self(bound, where):  # (`self.prop = ...`: _instance_handle_calls)
                        # `agent.act = torch.compile(agent.act)`: the calls `agent.act(...)` of it
                        name = f"{bound.value.value}.{bound.attr.value}"
                        out.append((name, where, entry, _dynamic_false(call), None))
    return out


def repeated_handle_calls(program: "Program", fn: "FunctionInfo") -> list[cst.Call]:
    """The calls of a name bound once, outside any loop, to ``torch.compile(...)`` of ``fn`` (``f =
    torch.compile(make())``), when they run that one compiled object more than once: two calls or more, or
    one in a loop.  Empty otherwise."""
    idx = program.index
    out: list[cst.Call] = []
    for name, scope, target, _, reached in _compiled_handles(program):
        body = scope.node.body if scope is not None else idx.module
        if target is not fn or "." in name or reached is not None or any(
                isinstance(loop, (cst.For, cst.While))
                and any(name in names_bound_by(n) for n in walk(loop.body, into_scopes=False))
                for loop in walk(body, into_scopes=False)):
            continue  # (a handle bound in a loop holds a new compiled object, and closure, at each pass)
        calls = [call for call, caller in _handle_calls(idx, name) if caller is scope]
        if len(calls) >= 2 or any(_repeating_loop((call, scope, program)) is not None for call in calls):
            out += calls
    return out


def _on_self(target: cst.Attribute, where: "FunctionInfo | None") -> bool:
    """``target`` is an attribute of the instance the method ``where`` runs on (``self.prop``)."""
    params = where.param_names() if where is not None and where.is_method and where.cls is not None else []
    return bool(params) and isinstance(target.value, cst.Name) and target.value.value == params[0]


def _instance_handle_calls(program: "Program"
                           ) -> dict[int, list[tuple[cst.Call, "FunctionInfo | None"]]]:
    """By ``id`` of a function of the module compiled into an attribute of an instance by a method of its
    class (``self.prop = torch.compile(propagate)`` in ``__init__``), its calls through that attribute:
    ``self.prop(...)`` in the methods of that class, and ``m.prop(...)`` on a name the module binds only to
    instances of it (``m = Model()``).  Dynamo caches the compiled function once, whichever instance holds
    it, and guards it on the arguments of those calls."""
    idx = program.index
    out: dict[int, list[tuple[cst.Call, "FunctionInfo | None"]]] = {}
    for call, where in idx.compile_targets:
        target = program.entry_points.compile_target(call, where)
        if target is None or target[0].owner is not idx or where is None:
            continue
        for n in walk(where.node.body, into_scopes=False):
            bound = n.targets[0].target if isinstance(n, cst.Assign) and len(n.targets) == 1 else None
            if not (isinstance(bound, cst.Attribute) and _compiled_by(n.value, call, idx)
                    and _on_self(bound, where)):
                continue
            cls, attr = where.cls, bound.attr.value
            for site, caller in idx.call_sites.get(attr, ()):
                func = site.func
                if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
                    continue
                own = caller is not None and caller.cls is cls and _on_self(func, caller)
                if own or bound_to_class(idx.module, func.value.value, cls.name):
                    out.setdefault(id(target[0]), []).append((site, caller))
    return out


def _loop_varying_arguments(call: cst.Call, caller: "FunctionInfo", params: list[cst.Param]) -> Iterator[str]:
    """Parameters to which ``call`` passes a number computed from the variable of an enclosing loop of
    the caller that takes at least two different values: ``for v in range(N)`` (N >= 2), ``for t in
    (1.0, 0.5)`` or over a name bound once to such a display, also through ``enumerate``."""
    loop_vars: set[str] = set()
    for n in walk(caller.node.body, into_scopes=False):
        if isinstance(n, cst.For) and any(m is call for m in walk(n.body, into_scopes=False)):
            loop_vars |= _varying_targets(n, caller)
    if not loop_vars:
        return
    for name, arg in _bound_arguments(call, params):
        if _number_of(arg, loop_vars):
            yield name


def _counted_arguments(site: _Site, caller: "FunctionInfo", params: list[cst.Param]
                       ) -> Iterator[tuple[str, cst.BaseExpression]]:
    """Parameters to which the call of ``site``, in a loop that runs at least twice, passes a number computed
    from a name the loop body changes by a number literal at every iteration, and binds nowhere else in it
    (``tok = step(tok, pos)``, ``pos += 1``: a decoding position), with the argument: whatever the name
    starts from (``pos = prompt.shape[1]``), the call sees another value each time."""
    loop = _repeating_loop(site)
    if loop is None or not isinstance(loop.body, cst.IndentedBlock):
        return
    counted = set()
    for stmt in loop.body.body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            step = literal_constant(small.value) if isinstance(small, cst.AugAssign) else NOT_LITERAL
            if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) \
                    and isinstance(small.operator, (cst.AddAssign, cst.SubtractAssign)) \
                    and type(step) in (int, float) and step != 0:
                counted.add(small.target.value)
    bound_again = [name for n in walk(loop.body, into_scopes=False) if not isinstance(n, cst.AugAssign)
                   for name in names_bound_by(n)]
    counted -= set(bound_again) | set(names_bound_by(loop))
    if not counted:
        return
    for name, arg in _bound_arguments(site[0], params):
        if _number_of(arg, counted):
            yield name, arg


def _number_passed(site: _Site, arg: cst.BaseExpression) -> bool:
    """What the caller passes at ``arg`` is a Python number (a size, an int): not a tensor, never ``None``."""
    value = _passed_value(site, arg)
    return value is not None and not value.maybe_none and (
        value.kind is Kind.SIZE or value.kind is Kind.PYTHON and value.qualname in (None, "builtins.int",
                                                                                   "builtins.float"))


def _varying_targets(loop: cst.For, caller: "FunctionInfo") -> set[str]:
    """The names a ``for`` loop binds to values that change between its iterations."""
    it, target = loop.iter, loop.target
    counted = isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate" \
        and len(it.args) == 1 and not it.args[0].star
    if counted and isinstance(target, cst.Tuple) and len(target.elements) == 2:
        it = it.args[0].value  # type: ignore[union-attr]
        names = [e.value for e in target.elements]
        return {n.value for n in names if isinstance(n, cst.Name)} if _takes_two_values(it, caller) else set()
    if isinstance(target, cst.Name) and (_counts_to_two(it) or _takes_two_values(it, caller)):
        return {target.value}
    return set()


def _takes_two_values(it: cst.BaseExpression, caller: "FunctionInfo") -> bool:
    """A tuple or list display of numbers with two different values, or a name bound once (in the
    caller, or at module level and never rebound) to one."""
    if isinstance(it, cst.Name):
        bound = [n.value for n in walk(caller.node.body, into_scopes=False)
                 if isinstance(n, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == it.value
                                                      for t in n.targets)]
        owner = caller.owner
        if not bound and owner is not None and it.value not in owner.mutated_globals \
                and it.value not in caller.param_names():
            bound = list(owner.globals.get(it.value, ()))
        if len(bound) != 1 or bound[0] is None:
            return False
        it = bound[0]
    if not isinstance(it, (cst.Tuple, cst.List)):
        return False
    values = [literal_constant(e.value) if not isinstance(e, cst.StarredElement) else NOT_LITERAL
              for e in it.elements]
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in values):
        return False
    return len(set(values)) >= 2


def _two_items(it: cst.BaseExpression) -> bool:
    """A list or tuple display of two items or more (none starred), or a list comprehension with one ``for``
    over ``range(N)`` of two iterations or more and no ``if``: a loop over it runs at least twice."""
    if isinstance(it, (cst.List, cst.Tuple)):
        return len(it.elements) >= 2 and not any(isinstance(e, cst.StarredElement) for e in it.elements)
    return isinstance(it, cst.ListComp) and it.for_in.inner_for_in is None and not it.for_in.ifs \
        and _counts_to_two(it.for_in.iter)


def _counts_to_two(it: cst.BaseExpression) -> bool:
    """``range(N)`` / ``range(a, b)`` with literals, at least two iterations."""
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"):
        return False
    bounds = [literal_constant(a.value) for a in it.args]
    if not bounds or any(not isinstance(b, int) or isinstance(b, bool) for b in bounds) or len(bounds) > 2:
        return False
    lo, hi = (0, bounds[0]) if len(bounds) == 1 else bounds
    return hi - lo >= 2


def _number_of(node: cst.BaseExpression, loop_vars: set[str]) -> bool:
    """A number computed from a loop variable and number literals, one to one (``n``, ``n + 1``,
    ``2 * n``, ``t / 10``)."""
    if isinstance(node, cst.Name):
        return node.value in loop_vars
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract, cst.Multiply,
                                                                            cst.Divide)):
        sides = (node.left, node.right)
        constants = [literal_constant(x) for x in sides if not _number_of(x, loop_vars)]
        return len(constants) == 1 and isinstance(constants[0], (int, float)) \
            and not isinstance(constants[0], bool) \
            and (constants[0] != 0 or isinstance(node.operator, (cst.Add, cst.Subtract)))
    return False


def guarded_read(program: "Program", fn: "FunctionInfo", name: str) -> bool:
    """Whether ``fn``, run as a frame of its own, reads its parameter ``name`` where Dynamo guards on
    it (see :func:`_specialising_read`)."""
    return _specialising_read(program, fn, name)


def _specialising_read(program: "Program", fn: "FunctionInfo", name: str, depth: int = 0) -> bool:
    """Whether ``fn`` reads its number parameter ``name`` where Dynamo specialises on it (arithmetic, a
    test, a size, a call): a number that is only bound to other names, packed into a tuple, list or
    dict, or returned installs no guard (measured on torch 2.13). Anything not understood is a read."""
    return _carriers(program, fn, name, depth) is None


def _carriers(program: "Program", fn: "FunctionInfo", name: str, depth: int) -> set[str] | None:
    """The names of ``fn`` that hold its parameter ``name`` (bound or packed, never read); None when
    the function reads it."""
    parents = parent_map(fn.node)
    tracked = {name}
    pending = [name]
    while pending:
        current = pending.pop()
        for n, parent in _mentions(fn, current, parents, into_scopes=False):
            node = n
            new: list[str] | None = None
            while True:
                parent = parents.get(id(node))
                if isinstance(parent, (cst.Element, cst.DictElement)) and parent.value is node:
                    node = parents.get(id(parent))  # packed: the container carries it
                    if not isinstance(node, (cst.Tuple, cst.List, cst.Dict)):
                        return None
                    continue
                if isinstance(parent, cst.AssignTarget):
                    break  # stored to
                if isinstance(parent, (cst.Subscript, cst.Attribute)) and parent.value is node:
                    node = parent  # read back from its container: followed as the value itself
                    continue
                call = parents.get(id(parent)) if isinstance(parent, cst.Arg) else None
                if isinstance(call, cst.Call) and node is n and _breaks_at_call(program, call):
                    parent = None  # (`print("calling", name)`: the call run eagerly gets it as it is)
                    break
                if isinstance(call, cst.Call):
                    new = _through_call(program, call, parent, depth)
                    if new is None:
                        return None
                    node = call
                    parent = parents.get(id(call))
                break
            if parent is None or isinstance(parent, (cst.AssignTarget, cst.Return)):
                continue
            if not (isinstance(parent, cst.Assign) and parent.value is node):
                return None
            targets = [t.target for t in parent.targets]
            if new is not None:  # a call's result: only the tuple elements that carry the value
                if len(targets) != 1 or not isinstance(targets[0], (cst.Tuple, cst.List)):
                    return None if new else tracked
                parts = [e.value for i, e in enumerate(targets[0].elements) if i in new]
            else:
                parts = [part for t in targets for part in (
                    [e.value for e in t.elements] if isinstance(t, (cst.Tuple, cst.List)) else [t])]
            if not all(isinstance(part, cst.Name) for part in parts):
                return None
            for part in parts:
                if part.value not in tracked:
                    tracked.add(part.value)
                    pending.append(part.value)
    return tracked


def only_printed(program: "Program", ev: Event) -> bool:
    """``ev``'s node is an argument, as it is, of a ``print`` that Dynamo breaks at, which runs eagerly with
    what it was given: the read installs no guard (see :func:`_breaks_at_call`)."""
    return any(type(n) is cst.Call and any(a.value is ev.node for a in n.args) and _breaks_at_call(program, n)
               for n in walk(ev.statement))


def _breaks_at_call(program: "Program", call: cst.Call) -> bool:
    """Dynamo breaks the graph at ``call``, a ``print``: it runs the call eagerly with the arguments it was
    given, and a name passed as it is installs no guard (measured on torch 2.13: a string argument only
    printed does not recompile; ``print(round(v, 3))`` traces ``round`` first, and does; a float handed to a
    function Dynamo skips, ``bisect.bisect_left(bounds, v)``, is guarded)."""
    return any(isinstance(ev, CallEvent) and ev.node is call and ev.qualname == "builtins.print"
               and program.break_classifier().breaks_at(ev) for ev in program.events)


def _through_call(program: "Program", call: cst.Call, arg: cst.Arg, depth: int) -> set[int] | None:
    """``arg`` handed to a function of this module that does not read it: the positions of the
    returned tuple that carry it on (empty: not returned); None when the function reads it or is
    not known."""
    callee = program.index.functions.get(call.func.value) if isinstance(call.func, cst.Name) else None
    position = next((i for i, a in enumerate(call.args) if a is arg), -1)
    names = callee.param_names() if callee is not None else []
    if callee is None or depth >= 3 or arg.star or arg.keyword is not None or position >= len(names):
        return None
    held = _carriers(program, callee, names[position], depth + 1)
    if held is None:
        return None
    positions: set[int] = set()
    for n in walk(callee.node.body, into_scopes=False):
        if isinstance(n, cst.Return) and n.value is not None:
            if isinstance(n.value, cst.Tuple):
                positions |= {i for i, e in enumerate(n.value.elements)
                              if isinstance(e.value, cst.Name) and e.value.value in held}
            elif isinstance(n.value, cst.Name) and n.value.value in held:
                return None  # returned as it is: followed no further
    return positions


def handed_on(fn: "FunctionInfo", name: str, reads: "Mapping[int, Callable[[int], bool]] | None" = None,
              frameless: frozenset[int] = frozenset()) -> bool:
    """Whether ``fn`` passes its parameter ``name`` (or a value computed from it) to a function that
    Dynamo compiles as a frame of its own when it runs the entry point eagerly: a call of a name that is
    not a builtin, or a method of ``self``. Tensor methods and library functions (``torch.exp(x * t)``,
    ``F.relu``) are not: in a frame that runs eagerly they install no guard.

    ``reads`` maps the calls of functions of the project (by ``id``) to whether that function reads its
    ``i``-th argument where Dynamo guards on it in a frame with a graph.  At such calls a number bound
    to a name first, or packed in a tuple, list, dict or record (``v = int(k); p = (h, v); helper(h,
    p)``), counts too, and an argument the function does not read does not.  ``frameless``: the calls (by
    ``id``) that run without a frame Dynamo compiles (an ``nn.LSTM``'s, which it skips)."""
    reads = reads or {}
    functions = frozenset(reads)
    carried = _number_names(fn, name, functions)
    for node in walk(fn.node.body):
        if not isinstance(node, cst.Call) or id(node) in frameless:
            continue
        func = node.func
        if isinstance(func, cst.Name):
            if func.value in _BUILTIN_NAMES:
                continue
        elif not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"):
            continue
        known = carried if id(node) in functions else {name}
        for i, a in enumerate(node.args):
            if any(isinstance(n, cst.Name) and n.value in known for n in walk(a.value)) \
                    and (id(node) not in functions or reads[id(node)](i)):
                return True
    return False


def calls_handing(fn: "FunctionInfo", name: str, functions: frozenset[int], after: cst.CSTNode
                  ) -> Iterator[tuple[cst.Call, list[int]]]:
    """The calls in ``functions`` (ids of calls of functions of the project) that ``fn`` makes after the
    statement ``after`` and hand the number bound to ``name`` (as it is, or in a name, display or record
    that carries it: :func:`_number_names`), with the positions of the arguments that carry it."""
    carried = _number_names(fn, name, functions)
    started = False
    for node in walk(fn.node.body, into_scopes=False):
        started = started or node is after
        if not started or not isinstance(node, cst.Call) or id(node) not in functions:
            continue
        held = [i for i, a in enumerate(node.args)
                if any(isinstance(n, cst.Name) and n.value in carried for n in walk(a.value))]
        if held:
            yield node, held


def _number_names(fn: "FunctionInfo", name: str, functions: frozenset[int]) -> set[str]:
    """``name`` and the local names ``fn`` binds to numbers computed from it (arithmetic, ``int()``,
    ``round()``...) or to tuples, lists, dicts and records that hold one (``Pack(h, v)``: a call of a
    name that is no builtin and not among the calls of functions, ``functions``); a value mixed with
    anything else (a tensor, an unknown call) is not followed, since a tensor handed on installs no
    value guard."""
    return _names_bound_from(fn, name, lambda v, names: _carries_number(v, names, functions))


def _names_bound_from(fn: "FunctionInfo", name: str,
                      carries: "Callable[[cst.BaseExpression, set[str]], bool]") -> set[str]:
    """``name`` and every local name ``fn`` assigns a value that ``carries`` one of the names found so far
    (to a fixed point: in a loop, an assignment may read a name that a later one binds)."""
    names = {name}
    assigns = [n for n in walk(fn.node.body, into_scopes=False) if isinstance(n, cst.Assign)]
    grown = True
    while grown:
        grown = False
        for a in assigns:
            if not carries(a.value, names):
                continue
            for t in a.targets:
                if isinstance(t.target, cst.Name) and t.target.value not in names:
                    names.add(t.target.value)
                    grown = True
    return names


def _carries_number(node: cst.BaseExpression, names: set[str], functions: frozenset[int]) -> bool:
    """``node`` is a number computed from ``names`` alone, or a display or record with such an element."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value not in _BUILTIN_NAMES \
            and id(node) not in functions:
        return any(_number_of_names(a.value, names) for a in node.args if not a.star)
    if isinstance(node, (cst.Tuple, cst.List)):
        return any(_number_of_names(e.value, names) for e in node.elements if isinstance(e, cst.Element))
    if isinstance(node, cst.Dict):
        return any(_number_of_names(e.value, names) for e in node.elements if isinstance(e, cst.DictElement))
    return _number_of_names(node, names)


def _number_of_names(node: cst.BaseExpression, names: set[str], seen: bool = False) -> bool:
    """Arithmetic of ``names``, number literals and ``int``/``float``/``round``/``abs``/``min``/``max``
    (or ``operator.add`` and its kin) that mentions at least one of ``names``."""
    if isinstance(node, cst.Name):
        return node.value in names
    if isinstance(node, (cst.Integer, cst.Float)):
        return seen
    if isinstance(node, cst.UnaryOperation):
        return _number_of_names(node.expression, names, seen)
    if isinstance(node, cst.BinaryOperation):
        parts = (node.left, node.right)
        return (all(isinstance(p, (cst.Integer, cst.Float)) or _number_of_names(p, names, True) for p in parts)
                and any(_number_of_names(p, names) for p in parts))
    if isinstance(node, cst.Call) and (isinstance(node.func, cst.Name) and node.func.value in _NUMBER_BUILTINS
                                       or dotted_name(node.func) in _OPERATOR_FUNCTIONS):
        args = [a.value for a in node.args if not a.star and a.keyword is None]
        return (bool(args) and all(isinstance(p, (cst.Integer, cst.Float)) or _number_of_names(p, names, True)
                                   for p in args) and any(_number_of_names(p, names) for p in args))
    return False


_NUMBER_BUILTINS = frozenset({"int", "float", "round", "abs", "min", "max"})
#: the functions of the ``operator`` module that compute a number from numbers, as arithmetic does
_OPERATOR_FUNCTIONS = frozenset(f"operator.{name}" for name in ("add", "sub", "mul", "truediv", "floordiv", "mod",
                                                                 "pow", "neg", "pos", "abs"))


def read_before(fn: "FunctionInfo", name: str, part: "EagerPart") -> bool:
    """``fn`` mentions its parameter ``name`` before the part of it that Dynamo runs eagerly: that
    part of ``fn`` is compiled (a break outside any loop ends its graph), and guarded on what it
    reads (measured on torch 2.13).  So is the test of an ``if`` of its body, before that part's loop, whose
    branch returns: a call that takes that branch never reaches the loop, and its frame is compiled and
    guarded on the test (``if mode == "greedy": return ...``, then a loop that breaks)."""
    if any(isinstance(n, cst.Name) and n.value == name and not part.eager(n)
           for n in walk(fn.node.body, into_scopes=False)):
        return True
    loop_at = part.order.get(id(part.loop), -1)
    return any(isinstance(s, cst.If) and part.order.get(id(s), loop_at) < loop_at
               and any(isinstance(r, cst.Return) for r in simple_statements(s.body))
               and any(isinstance(n, cst.Name) and n.value == name for n in walk(s.test))
               for s in simple_statements(fn.node.body))


_BUILTIN_NAMES = frozenset(dir(builtins))


def _callees(program: "Program") -> dict[int, "FunctionInfo"]:
    """Call node id -> the function of the project it calls (not a class), as the evaluation resolved it."""
    return {id(ev.node): ev.callee for ev in program.events
            if isinstance(ev, CallEvent) and ev.callee is not None and ev.callee.cls is None}


def _index_tensor_values(program: "Program", fn: "FunctionInfo", params: list[cst.Param], sites: list[_Site],
                         static: bool, eager: "Callable[[FunctionInfo, cst.CSTNode], bool]",
                         callees: "Callable[[], dict[int, FunctionInfo]]") -> Iterator[ParameterValues]:
    """The parameters of ``fn`` to which every call passes ``torch.tensor(n)`` of an integer ``n`` that
    differs between the calls (literals, or a number computed from the variable of the loop that makes
    the calls), and which ``fn`` uses as an index (``x[i]``, ``x[:, i] = v``) or as the size of a tensor
    it iterates over (``for e in x.new_ones(i)``), as it is, through the names, displays and records
    that carry it, ``copy.deepcopy`` of it, or the functions of the project it hands it to.  Dynamo
    reads such a 0-d tensor's value there and guards on it (``i.item() == 1``), so each new value
    recompiles: no automatic dynamic (measured on torch 2.13).  A use in a part that Dynamo runs
    eagerly (``eager``) installs no guard."""
    for prm in params:
        name = prm.name.value
        passed: dict[int, _Site] = {}
        looped: _Site | None = None
        for site in sites:
            call, caller, owner = site
            arg = dict(_bound_arguments(call, params)).get(name)
            if isinstance(arg, cst.Name) and _over_a_tensor(owner, call, _replayed_caller(site), arg.value):
                looped = looped or site  # `for t in timesteps: step(x, t)` of `timesteps = torch.arange(...)`
                continue
            number = _tensor_of_number(owner, arg) if arg is not None else None
            if number is None:
                break
            value = literal_constant(number)
            if isinstance(value, int) and not isinstance(value, bool):
                passed.setdefault(value, site)
            elif _number_of(number, _loop_variables(call, _replayed_caller(site))):
                looped = looped or site
            else:
                break
        else:
            if (len(passed) >= 2 or looped is not None) \
                    and _indexes_with(program, fn, name, callees(), eager, 0):
                shown = [(_where(site, program), f"`torch.tensor({value})`") for value, site in passed.items()]
                if looped is not None:
                    shown.append((_where(looped, program), "0-d tensors of numbers that change from one loop "
                                                           "iteration to the next"))
                yield ParameterValues(fn, prm, frozenset(("tensor", v) for v in passed), looped is not None,
                                      tuple(dict.fromkeys(shown)), static, indexes=True)


def _tensor_of_number(owner: "Program", node: cst.BaseExpression) -> cst.BaseExpression | None:
    """``n`` of ``torch.tensor(n)`` (no dtype, or an integer one), else None."""
    if not isinstance(node, cst.Call) or not node.args or node.args[0].keyword is not None or node.args[0].star:
        return None
    name = dotted_name(node.func) or ""
    head, _, rest = name.partition(".")
    if owner.index.imports.get(head) != "torch" or rest != "tensor":
        return None
    for arg in node.args[1:]:
        if arg.keyword is None or arg.keyword.value != "dtype" or \
                (dotted_name(arg.value) or "").rpartition(".")[2] not in _INT_DTYPES:
            if arg.keyword is None or arg.keyword.value not in ("device", "requires_grad"):
                return None
    return node.args[0].value


_INT_DTYPES = frozenset({"int64", "long", "int32", "int", "int16", "int8", "uint8"})


#: torch's factories of a 1-d tensor of several numbers, which a loop iterates one 0-d tensor at a time
_RANGE_FACTORIES = frozenset({"arange", "linspace", "randperm", "tensor"})
#: tensor methods that keep a tensor's elements tensors (a loop over the result still hands on 0-d tensors)
_KEEPS_ELEMENTS = frozenset({"long", "int", "flip", "to", "cpu", "cuda", "clone", "contiguous"})


def _over_a_tensor(owner: "Program", call: cst.Call, caller: "FunctionInfo", name: str) -> bool:
    """``name`` is the variable of a loop of ``caller`` around ``call`` that iterates a tensor a torch factory
    makes there (``for t in torch.arange(999, 0, -333)``, or a name bound once to it): each iteration hands
    on a 0-d tensor of another number."""
    for n in walk(caller.node.body, into_scopes=False):
        if not (isinstance(n, cst.For) and isinstance(n.target, cst.Name) and n.target.value == name
                and any(m is call for m in walk(n.body, into_scopes=False))):
            continue
        it = n.iter
        if isinstance(it, cst.Name):
            iterated = it.value
            bound = [b.value for b in walk(caller.node.body, into_scopes=False) if isinstance(b, cst.Assign)
                     and any(type(t.target) is cst.Name and t.target.value == iterated for t in b.targets)]
            it = bound[0] if len(bound) == 1 else it
        while isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) \
                and isinstance(it.func.value, cst.Call) and it.func.attr.value in _KEEPS_ELEMENTS:
            it = it.func.value  # `torch.arange(n).flip(0).long()`
        dotted = dotted_name(it.func) if isinstance(it, cst.Call) else None
        head, _, rest = (dotted or "").partition(".")
        if owner.index.imports.get(head) == "torch" and rest in _RANGE_FACTORIES:
            return True
    return False


def _loop_variables(call: cst.Call, caller: "FunctionInfo") -> set[str]:
    """The names the loops of ``caller`` around ``call`` bind to values that change between their
    iterations."""
    out: set[str] = set()
    for n in walk(caller.node.body, into_scopes=False):
        if isinstance(n, cst.For) and any(m is call for m in walk(n.body, into_scopes=False)):
            out |= _varying_targets(n, caller)
    return out


def _indexes_with(program: "Program", fn: "FunctionInfo", name: str, callees: dict[int, "FunctionInfo"],
                  eager: "Callable[[FunctionInfo, cst.CSTNode], bool]", depth: int) -> bool:
    """``fn`` uses the 0-d tensor its parameter ``name`` holds as an index, or as the size of a tensor
    it iterates over, outside the part Dynamo runs eagerly, or hands it to a function of the project
    that does (see :func:`index_tensor_arguments`)."""
    carried = _tensor_carriers(fn, name, callees)
    for node in walk(fn.node.body, into_scopes=False):
        if isinstance(node, cst.Subscript):
            if any(isinstance(e.slice, cst.Index) and _root(e.slice.value) in carried for e in node.slice) \
                    and not eager(fn, node):
                return True
        elif isinstance(node, cst.For):
            it = node.iter
            if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) \
                    and any(_root(a.value) in carried for a in it.args) and not eager(fn, node):
                return True
        elif isinstance(node, cst.Call) and id(node) in callees and depth < 2:
            callee = callees[id(node)]
            names = callee.param_names()
            if callee.is_method or any(a.star or a.keyword for a in node.args):
                continue
            for i, a in enumerate(node.args[:len(names)]):
                if _root(a.value) in carried:
                    owner = program.program_for(callee.owner)
                    inner = {id(ev.node): ev.callee for ev in owner.events
                             if isinstance(ev, CallEvent) and ev.callee is not None and ev.callee.cls is None} \
                        if owner is not program else callees
                    if _indexes_with(owner, callee, names[i], inner, eager, depth + 1):
                        return True
    return False


def _root(node: cst.BaseExpression) -> str | None:
    """The name an access chain starts from (``p`` of ``p[1]``, ``p.v``, ``p["v"]``)."""
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _tensor_carriers(fn: "FunctionInfo", name: str, callees: dict[int, "FunctionInfo"]) -> set[str]:
    """``name`` and the local names ``fn`` binds to it, to ``copy.deepcopy`` of it, or to tuples, lists,
    dicts and records (a call of a name that is no builtin and no function of the project) that hold
    one of those names."""
    def carries(v: cst.BaseExpression, names: set[str]) -> bool:
        if isinstance(v, cst.Name):
            return v.value in names
        if isinstance(v, (cst.Tuple, cst.List)):
            return any(isinstance(e, cst.Element) and isinstance(e.value, cst.Name) and e.value.value in names
                       for e in v.elements)
        if isinstance(v, cst.Dict):
            return any(isinstance(e, cst.DictElement) and isinstance(e.value, cst.Name) and e.value.value in names
                       for e in v.elements)
        if isinstance(v, cst.Call):
            args = [x.value for x in v.args if not x.star and x.keyword is None]
            copy = (dotted_name(v.func) or "") in ("copy.deepcopy", "copy.copy") and len(args) == 1
            record = isinstance(v.func, cst.Name) and v.func.value not in _BUILTIN_NAMES and id(v) not in callees
            return (copy or record) and any(isinstance(x, cst.Name) and x.value in names for x in args)
        return False

    return _names_bound_from(fn, name, carries)
