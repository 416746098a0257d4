"""The interprocedural driver: analysing the entry points, calls into functions and ``nn.Module``
instances with the caller's argument values, and the entries that cross modules (see
:mod:`dynalint.analysis.program`).
"""
from __future__ import annotations

from typing import Any, Hashable

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis.evaluator import FunctionEvaluator, annotation_value
from dynalint.analysis.events import CallEvent
from dynalint.analysis.module_index import COMPILE_NAMES, ClassInfo, FunctionInfo, is_generator_function, local_names_of
from dynalint.analysis.syntax import decorator_target
from dynalint.analysis.project import bound_entry, decode_value, encode_value, split_entry
from dynalint.analysis.cut import CutReplay
from dynalint.analysis.replay import (
    BROKE,
    BUSY,
    CALL,
    COMPILED,
    CONTEXT,
    END,
    ENTRY,
    FOUND,
    NESTED,
    REFUSED,
    REMEMBERED,
    Record,
)
from dynalint.analysis.values import (
    NO_CONST,
    NONE_VALUE,
    PYTHON_VALUE,
    UNKNOWN_VALUE,
    Kind,
    Value,
    bound_parameter,
    join_all,
    python,
    join,
    sequence,
    tensor,
)
from dynalint.config.settings import Scope

MAX_CALL_DEPTH = 6
MAX_ANALYSES_PER_FUNCTION = 12
"""Calling contexts analysed per function (bounds the cost of functions called from many places)."""

DECORATES = ("@", "@()")
"""Keys of an entry saying that the function decorates compiled code of the module that sends it: applied
to it (``@deco``), or called first (``@deco(...)``); see :meth:`Interprocedural.analyze_wrapper`."""


class Interprocedural(CutReplay):
    """The analysis of a module's entry points and of the calls they make, for its
    :class:`~dynalint.analysis.program.Program` (whose events and compiled functions it fills).  Owns
    what the calls decide: the memo ``calls`` (calling context -> the call's result), the calls that
    broke the graph, how many contexts each function was analysed in, and the functions met defined
    inside analysed code."""

    def __init__(self, program: Any) -> None:
        super().__init__(program)
        self._calls = program.memo("calls")
        """Calling context (see :meth:`call_function`) -> what the call gives its caller."""
        self._broke: set[tuple] = set()
        """Keys of ``_calls`` whose analysis broke the graph (a caller's statement ends there too)."""
        self._contexts: dict[int, int] = {}
        """Function ``id`` -> the calling contexts it was analysed in (at most
        :data:`MAX_ANALYSES_PER_FUNCTION`)."""
        self._wrapped: set[tuple[int, bool]] = set()
        """Decorators (``id``, whether called first) whose wrappers are analysed as compiled code, or sent
        to their module for it (see :meth:`_decorates`)."""
        self.closures: list[FunctionInfo] = []
        """Functions defined inside analysed code (kept: remembered results name them by identity; see
        :meth:`~dynalint.analysis.program.Program.let_go`)."""

    def run(self) -> None:
        """Analyse the entry points (:meth:`EntryPoints.roots`), the functions defined inside them (scope
        ALL) and the incoming entries, replaying what an analysis before an edit recorded."""
        prog = self.program
        widened = prog.scope is Scope.ALL
        start: int | None = None
        for fn, bound in prog.entry_points.roots():
            if id(fn) in prog.entry_points.widened and prog._entry_reach is None:
                prog._entry_reach = (len(prog.compiled), len(prog.events))
            if bound is None and id(fn) in prog.entry_points.library and id(fn) in prog._compiled_ids:
                # compiled code of this module calls it: analysed with the values its callers pass, as
                # a function of another module that compiled code reaches is (see ``_summary_roots``);
                # one run on a subclass's instance runs that class's overrides, which those calls may not
                continue
            if start is None and (id(fn) in prog.entry_points.widened or id(fn) in prog.entry_points.library):
                start, uncompiled_from = len(prog.events), len(prog.compiled)
            if bound is not None and id(fn) not in prog.entry_points.library:
                self.note_outgoing(fn, None, bound=bound)
            prog.widening = id(fn) in prog.entry_points.widened
            self._unit(("root", id(fn), id(bound)), (fn, bound), lambda: self.analyze_root(fn, bound))
        prog.widening = widened
        # scope ALL means every function: also those defined inside others and never called there
        # (a decorator's wrapper, a hook), with the enclosing function's names as their closure
        if widened and prog._entry_reach is None:
            prog._entry_reach = (len(prog.compiled), len(prog.events))
        if widened and start is None:
            start, uncompiled_from = len(prog.events), len(prog.compiled)
        while prog._nested:
            pending = list(prog._nested.values())
            prog._nested.clear()
            for fn in pending:
                if id(fn.node) not in prog._compiled_nodes:
                    self._unit(("nested", id(fn)), (fn,), lambda: self.analyze_root(fn))
        prog.widening = False
        uncompiled = range(0)
        if start is not None:
            # library roots, then (scope all) every other function: what nothing in the checked files
            # is known to compile
            prog._uncompiled_span = (start, len(prog.events))
            uncompiled = range(uncompiled_from, len(prog.compiled))
        for name, encoded in prog.entries.items():
            qualname, bound_name = split_entry(name)
            fn = self.function_named(qualname)
            if fn is None or fn.disabled:
                continue
            if bound_name is None:
                for factory in (False, True):
                    if encoded.get(DECORATES[factory]):
                        self._decorates(fn, factory)
                params = {k: v for k, v in encoded.items() if k not in DECORATES}
                if params or not encoded:
                    self._unit(("entry", id(fn)), (fn,), lambda: self.analyze_entry(fn, params))
                continue
            cls = self._subclass_named(fn, *bound_name)
            if cls is not None:
                self._unit(("entry", id(fn), id(cls)), (fn, cls), lambda: self.analyze_bound_entry(fn, cls, encoded))
        self._analyse_wrappers(uncompiled)
        tracker = prog.tracker
        if tracker is not None:
            tracker.seal(prog.index, not prog.run_state.programs, self._broke)

    def _unit(self, key: tuple, refs: tuple, analyse: Any) -> None:
        """Analyse one entry point, or replay its record (see :mod:`dynalint.analysis.replay`)."""
        prog = self.program
        prog.unit_starts.append(len(prog.events))
        tracker = prog.tracker
        if tracker is None:
            analyse()
            return
        rec = tracker.old_record(key, 0)
        if rec is not None and self._replays(rec):
            self._replay(rec)
            tracker.records[key] = rec
            return
        shell = tracker.old_record(key, 0, own=True)
        if shell is not None and self._cut(shell):
            return
        self._recorded(key, 0, refs, analyse)

    def _recorded(self, key: Hashable, depth: int, refs: tuple, analyse: Any, call: tuple | None = None) -> Any:
        """Evaluate, recording what was read and done (a call's log, between CALL and END entries)."""
        prog = self.program
        tracker = prog.tracker
        assert tracker is not None
        tracker.evaluated += 1
        events = len(prog.events)
        if depth:
            tracker.log.append((CALL, key, events))
        log = len(tracker.log)
        tracker.push()
        try:
            value = analyse()
        finally:
            tokens, own = tracker.pop_record()
        tracker.records[key] = Record(key, depth, tokens, tuple(prog.events[events:]), tuple(tracker.log[log:]),
                                      value, refs, events, own, call)
        if depth:
            tracker.log.append((END, key, len(prog.events)))
        return value

    def _may_analyse(self, fn_id: int) -> bool:
        """Whether a call of the function may still be analysed in one more context."""
        return self._contexts.get(fn_id, 0) < MAX_ANALYSES_PER_FUNCTION

    def _replays(self, rec: Record) -> bool:
        """Whether the log of ``rec`` applies to the state now as it did when it was recorded."""
        prog = self.program
        tracker = prog.tracker
        assert tracker is not None
        memos, old = prog.memos, tracker.old_memos
        made = {(e[1], e[2]) for e in rec.log if e[0] is REMEMBERED}
        counted: dict[int, int] = {}
        seen: set[tuple[str, Hashable]] = set()
        for e in rec.log:
            kind = e[0]
            if kind is CONTEXT or kind is REFUSED:
                n = self._contexts.get(e[1], 0) + counted.get(e[1], 0)
                if (n < MAX_ANALYSES_PER_FUNCTION) != (kind is CONTEXT):
                    return False
                if kind is CONTEXT:
                    counted[e[1]] = counted.get(e[1], 0) + 1
            elif kind is REMEMBERED:
                memo, before = memos[e[1]], old.get(e[1])
                if e[2] in memo.done or e[2] in memo._busy or before is None or e[2] not in before.done:
                    return False
                seen.add((e[1], e[2]))
            elif kind is FOUND:
                if e[2] not in memos[e[1]].done and (e[1], e[2]) not in seen:
                    return False
            elif kind is BUSY:
                if (e[1], e[2]) not in made and e[2] not in memos[e[1]]._busy \
                        and not (e[1] == "calls" and e[2] == rec.key):
                    return False
        return True

    def _replay(self, rec: Record) -> None:
        """Apply the log of ``rec`` (and append its events), as its evaluation did."""
        prog = self.program
        tracker = prog.tracker
        assert tracker is not None
        tracker.replayed += 1
        shift = len(prog.events) - rec.start
        prog.events.extend(rec.events)
        for e in rec.log:
            if e[0] is REMEMBERED:
                tracker.put_back(e[1], e[2])
            else:
                self._apply(e)
        tracker.log.extend(rec.log if not shift else [(e[0], e[1], e[2] + shift) if e[0] is CALL or e[0] is END else e
                                                      for e in rec.log])
        tracker.stack[-1] |= rec.tokens

    def _apply(self, e: tuple) -> None:
        """Change the state as the log entry ``e`` records (all kinds but REMEMBERED, whose result comes
        from the analysis before; checks and markers change nothing)."""
        prog = self.program
        kind = e[0]
        if kind is CONTEXT:
            self._contexts[e[1]] = self._contexts.get(e[1], 0) + 1
        elif kind is COMPILED:
            self.mark_compiled(e[1], log=False)
        elif kind is BROKE:
            self._broke.add(e[1])
        elif kind is NESTED:
            prog._nested.setdefault(id(e[1].node), e[1])
        elif kind is ENTRY:
            prog.entry_points.entered.add(id(e[1]))

    def note_nested(self, fn: FunctionInfo) -> None:
        """A function defined inside analysed code (see :meth:`run`)."""
        prog = self.program
        if prog.scope is Scope.ALL and id(fn.node) not in prog._compiled_nodes:
            prog._nested.setdefault(id(fn.node), fn)
            if prog.tracker is not None:
                prog.tracker.log.append((NESTED, fn))

    def function_named(self, qualname: str) -> FunctionInfo | None:
        """A module-level function (``f``) or method (``C.m``) of this module."""
        prog = self.program
        head, _, last = qualname.rpartition(".")
        if not head:
            return prog.index.functions.get(last)
        cls = prog.index.classes.get(head)
        return cls.methods.get(last) if cls is not None else None

    def analyze_root(self, fn: FunctionInfo, bound: ClassInfo | None = None) -> None:
        """Analyse an entry point; ``bound``: the subclass whose instance runs an inherited method."""
        prog = self.program
        if (fn.compile_decorated or id(fn) in prog.entry_points.entered) and is_generator_function(fn):
            return  # Dynamo skips a generator's own frame: compiled, it runs eagerly (measured on torch 2.13)
        owner = prog.program_for(fn.owner)
        ev = owner.signatures.evidence(fn)
        env = owner.signatures.param_env(fn, ev, forward=id(fn) in prog.entry_points.entered)
        if bound is not None and fn.is_method and not fn.is_classmethod:
            env[fn.param_names()[0]] = prog.classes.instance(bound)
        owner.calls.mark_compiled(fn)
        root = FunctionEvaluator(owner, fn, env, emit=True)
        root.frame_start = id(fn) in prog.entry_points.entered
        root.run_body(fn.node.body)

    def _analyse_wrappers(self, uncompiled: range) -> None:
        """The wrappers the decorators of this module's compiled functions put in front of them (see
        :meth:`analyze_wrapper`), until no new one is met: a wrapper's analysis may compile more.  Read from
        the functions marked compiled, which a replayed analysis marks again.  ``uncompiled``: the positions
        of :attr:`~dynalint.analysis.program.Program.compiled` analysed only because a caller elsewhere may
        compile them (a library root, scope all), left out."""
        prog = self.program
        done = 0
        while done < len(prog.compiled):
            start, done = done, len(prog.compiled)
            for i in range(start, done):
                fn = prog.compiled[i]
                if i not in uncompiled and fn.node.decorators and fn.owner is prog.index:
                    for deco, factory in self._wrapping_decorators(fn):
                        self._decorates(deco, factory)

    def _wrapping_decorators(self, fn: FunctionInfo) -> list[tuple[FunctionInfo, bool]]:
        """The decorators of compiled function ``fn`` that are functions of the checked code, each with
        whether it is called first (``@deco(...)``, a factory): what each returns in place of ``fn`` (a
        wrapper) is what Dynamo runs, so its code is compiled code too.  For a function handed to
        ``torch.compile`` by a decorator, only the decorators below that one are inside it."""
        decorators = list(fn.node.decorators)
        if fn.compile_decorated:
            compiling = [i for i, q in enumerate(fn.decorators) if q in COMPILE_NAMES]
            decorators = decorators[compiling[-1] + 1:] if compiling else []
        out = []
        for d in decorators:
            value = self.program.names.static_value_of(decorator_target(d))
            if value is not None and value.kind is Kind.FUNCTION and value.func is not None \
                    and value.func.closure is None and value.func is not fn:
                out.append((value.func, isinstance(d.decorator, cst.Call)))
        return out

    def _decorates(self, deco: FunctionInfo, factory: bool) -> None:
        """``deco`` decorates compiled code (called first when ``factory``): the wrapper it returns is
        analysed by the program of ``deco``'s module (an entry for it when another module's)."""
        prog = self.program
        if (id(deco), factory) in self._wrapped:
            return
        self._wrapped.add((id(deco), factory))
        owner = prog.program_for(deco.owner)
        if owner is not prog:
            self.note_outgoing(deco, None, decorates=DECORATES[factory])
            return
        self._unit(("decorator", id(deco), factory), (deco,), lambda: self.analyze_wrapper(deco, factory))

    def analyze_wrapper(self, deco: FunctionInfo, factory: bool) -> None:
        """Analyse, as compiled code, the function ``deco`` returns for a function it decorates (called
        first with its defaults when ``factory``): ``def deco(func): @wraps(func) def wrapper(self, *args,
        **kwargs): ...; return wrapper``.  The decorator itself runs when the decorated function is defined,
        not under the compiler, and what the wrapper is handed is not known here: its parameters and the
        decorated function are unknown values."""
        prog = self.program
        maker = FunctionEvaluator(prog, None, {}, emit=False, depth=MAX_CALL_DEPTH - 2)
        applied = self.call_function(maker, deco, [], {}, None, False) if factory else Value(Kind.FUNCTION, func=deco)
        if applied.kind is not Kind.FUNCTION or applied.func is None:
            return
        made = self.call_function(maker, applied.func, [Value(Kind.FUNCTION)], {}, None, False)
        wrapper = made.func if made.kind is Kind.FUNCTION else None
        if wrapper is None or wrapper.closure is None or wrapper.disabled:
            return  # the decorated function itself, or nothing defined in the decorator
        self.mark_compiled(wrapper)
        env = {name: UNKNOWN_VALUE for name in wrapper.param_names()}
        FunctionEvaluator(prog, wrapper, env, emit=True).run_body(wrapper.node.body)

    def _subclass_named(self, fn: FunctionInfo, module: str, name: str) -> ClassInfo | None:
        """The class ``name`` of checked module ``module`` when it inherits method ``fn`` of this module
        without overriding it (what a :func:`~dynalint.analysis.project.bound_entry` names)."""
        prog = self.program
        if prog.project is None or fn.cls is None or fn.is_static or fn.is_classmethod:
            return None
        idx = prog.project.load(module)
        cls = idx.classes.get(name) if idx is not None else None
        if cls is None or cls is fn.cls or cls.find_method(fn.name) is not fn:
            return None
        return cls

    def analyze_bound_entry(self, fn: FunctionInfo, cls: ClassInfo, encoded: dict[str, Any]) -> None:
        """Analyse a method of this module as the compiled code of another module runs it: on an
        instance of ``cls``, a subclass defined there (``"*"`` in ``encoded``: handed to
        ``torch.compile``), so that the lines here that its overrides break are found."""
        prog = self.program
        if encoded.get("*"):
            prog.entry_points.entered.add(id(fn))
            if prog.tracker is not None:
                prog.tracker.log.append((ENTRY, fn))
        self.analyze_root(fn, cls)

    def analyze_entry(self, fn: FunctionInfo, encoded: dict[str, Any]) -> None:
        """Analyse a function that compiled code of another module calls, with the values its
        callers pass (``"*"`` in ``encoded``: it is itself handed to ``torch.compile``)."""
        prog = self.program
        if encoded.get("*"):
            prog.entry_points.entered.add(id(fn))
            if prog.tracker is not None:
                prog.tracker.log.append((ENTRY, fn))
            self.analyze_root(fn)
            return
        env = prog.signatures.param_env(fn, prog.signatures.evidence(fn))
        assert prog.project is not None or not encoded
        for name, code in encoded.items():
            if name in env and prog.project is not None:
                value = decode_value(code, prog.project)
                if value == UNKNOWN_VALUE and value.cls is None and value.func is None and not value.choices \
                        and env[name].kind is Kind.TENSOR and prog.scope is not Scope.COMPILED:
                    # the callers pass what the analysis cannot type: the parameter is what the function's
                    # own use of it says, as for a helper no checked code calls (a library root)
                    continue
                prm = next((p for p in prog.signatures.param_nodes(fn) if p.name.value == name), None)
                declared = annotation_value(prog, prog.signatures.annotation_of(fn, prm)) \
                    if prm is not None and prog.signatures.annotation_of(fn, prm) is not None else None
                env[name] = bound_parameter(_refine(value, declared), declared)
        self.mark_compiled(fn)
        FunctionEvaluator(prog, fn, env, emit=True).run_body(fn.node.body)

    def mark_compiled(self, fn: FunctionInfo, log: bool = True) -> None:
        prog = self.program
        if log and prog.tracker is not None:
            prog.tracker.log.append((COMPILED, fn))
        if id(fn) not in prog._compiled_ids:
            prog._compiled_ids.add(id(fn))
            prog._compiled_nodes.add(id(fn.node))
            prog.compiled.append(fn)

    def note_outgoing(self, fn: FunctionInfo, env: dict[str, Value] | None, compiled: bool = False,
                       bound: ClassInfo | None = None, decorates: str | None = None) -> None:
        """A function of another checked module is reached from compiled code (see the module doc);
        ``bound``: a subclass, defined elsewhere, whose instance runs that method (its overrides may
        break lines of the method's module, see :func:`~dynalint.analysis.project.bound_entry`)."""
        prog = self.program
        owner = fn.owner
        if owner is None or owner is prog.run_state.root.index or not owner.path or fn.closure is not None:
            return
        if bound is not None and (bound is fn.cls or bound.owner is owner):
            if not compiled:
                return  # the method's own module knows the class
            bound = None
        if not compiled and bound is None and prog.program_for(owner).calls.is_default_root(fn):
            return
        qualname = fn.qualname if bound is None else bound_entry(fn.qualname, bound)
        if qualname is None:
            return
        key = (owner.path, qualname)
        joined = prog.outgoing.setdefault(key, {})
        if compiled or decorates:
            joined[decorates or "*"] = python(True)
            return
        if env is None:
            return
        skip = fn.param_names()[0] if fn.is_method and fn.param_names() else None
        for name, value in env.items():
            if name == skip:
                continue
            joined[name] = join(joined[name], value) if name in joined else value

    def is_default_root(self, fn: FunctionInfo) -> bool:
        """Analysed as an entry point by its own module whoever calls it."""
        if fn.compile_decorated:
            return True
        return fn.name == "forward" and fn.cls is not None and fn.cls.is_module

    def encoded_outgoing(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Outgoing entries as plain data: path -> qualname -> parameter -> encoded value."""
        prog = self.program
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for (path, qualname), params in prog.outgoing.items():
            out.setdefault(path, {})[qualname] = {
                k: (True if k == "*" or k in DECORATES else encode_value(v)) for k, v in sorted(params.items())}
        return out

    # ------------------------------------------------------------------ calls
    def call_function(self, caller: FunctionEvaluator, fn: FunctionInfo, args: list[Value],
                      kwargs: dict[str, Value], bound_self: Value | None, opaque: bool) -> Value:
        """Analyse a call into a function with the caller's argument values (in the program of
        the function's module)."""
        prog = self.program
        if fn.disabled or fn.custom_op is not None:
            return UNKNOWN_VALUE  # not traced: skipped, or an opaque custom op
        if fn.constant_result:
            return PYTHON_VALUE  # called while tracing: a constant of the graph
        owner = prog.program_for(fn.owner)
        if owner is not prog:
            return owner.calls.call_function(caller, fn, args, kwargs, bound_self, opaque)
        if fn is caller.not_followed:
            return self._unanalysed(fn)  # (neither analysed nor remembered: FunctionEvaluator.not_followed)
        env = prog.signatures.bind_args(fn, args, kwargs, bound_self, opaque)
        if caller.emit and not prog.is_root:
            self.note_outgoing(fn, env)
        key = (id(fn), caller.emit, caller.loop_depth > 0 or caller.outer_loop, caller.frame_start,
               tuple(sorted((k, _signature(v)) for k, v in env.items())))
        return self._keyed_call(caller, fn, env, bound_self, key)

    def _keyed_call(self, caller: Any, fn: FunctionInfo, env: dict[str, Value], bound_self: Value | None,
                    key: tuple) -> Value:
        """:meth:`call_function` from the key of its calling context on."""
        prog = self.program
        # too deep, or analysed in enough contexts already (recursive calls too): what it promises
        start = caller.depth < MAX_CALL_DEPTH and self._contexts.get(id(fn), 0) < MAX_ANALYSES_PER_FUNCTION
        tracker = prog.tracker
        if tracker is not None and key not in self._calls.done and key not in self._calls._busy:
            result = self._tracked_call(caller, fn, env, bound_self, key, start)
        else:
            result = self._calls.get(key, lambda: self._analyse_call(caller, fn, env, bound_self, key),
                                     lambda: self._unanalysed(fn), start)
        if key in self._broke:
            caller.callee_broke = True
        return result

    def _tracked_call(self, caller: FunctionEvaluator, fn: FunctionInfo, env: dict[str, Value],
                      bound_self: Value | None, key: tuple, start: bool) -> Value:
        """A call not analysed yet in this context, with a tracker: refused, replayed from the record of
        the analysis before an edit, or analysed and recorded."""
        prog = self.program
        tracker = prog.tracker
        assert tracker is not None

        def analyse() -> Value:
            return self._calls.get(key, lambda: self._analyse_call(caller, fn, env, bound_self, key),
                                   lambda: self._unanalysed(fn), start)

        if not start:
            if caller.depth < MAX_CALL_DEPTH:
                tracker.log.append((REFUSED, id(fn)))
            return analyse()
        if caller.evidence is not None or caller.attr_sink is not None:
            return analyse()  # its effects reach the caller's state: not a record of its own
        depth = caller.depth + 1
        rec = tracker.old_record(key, depth)
        if rec is not None and self._replays(rec):
            tracker.log.append((CALL, key, len(prog.events)))
            self._replay(rec)
            tracker.records[key] = rec
            tracker.log.append((END, key, len(prog.events)))
            return self._calls.done[key]
        shell = tracker.old_record(key, depth, own=True)
        if shell is not None and self._cut(shell):
            return self._calls.done[key]
        # (the environment as the call hands it over: the analysis of the body assigns its locals in it)
        return self._recorded(key, depth, _identities(fn, env), analyse, (fn, dict(env), bound_self))

    def _analyse_call(self, caller: FunctionEvaluator, fn: FunctionInfo, env: dict[str, Value],
                      bound_self: Value | None, key: tuple) -> Value:
        prog = self.program
        self._contexts[id(fn)] = self._contexts.get(id(fn), 0) + 1
        if prog.tracker is not None:
            prog.tracker.log.append((CONTEXT, id(fn)))
        seen = len(prog.events)
        if caller.emit:
            self.mark_compiled(fn)
        sink = caller.attr_sink if bound_self is not None and caller.attr_sink is not None \
            and bound_self.cls is not None else None
        callee = FunctionEvaluator(prog, fn, env, emit=caller.emit,
                                   depth=caller.depth if _base_init(caller, fn, sink) else caller.depth + 1,
                                   evidence=caller.evidence)
        callee.outer_loop = caller.loop_depth > 0 or caller.outer_loop
        callee.frame_start = caller.frame_start and not callee.outer_loop
        callee.attr_sink = sink
        callee.run_body(fn.node.body)
        sink = callee.attr_sink
        if sink is not None:
            # what a base's `__init__` set can be changed by the branches after the call (`if union ==
            # "vertical": self.with_h = False`): read on as attributes are, without a constant
            for k, v in sink.items():
                if v.has_const:
                    sink[k] = v.with_(const=NO_CONST)
        if caller.emit and any(prog.may_break_at(ev) or (isinstance(ev, CallEvent) and ev.callee_broke)
                               for ev in prog.events[seen:]):
            # a call into a function of another module that broke keeps its events in that module's
            # program: here only the call's event says so (a base's method running a subclass's override)
            self._broke.add(key)
            if prog.tracker is not None:
                prog.tracker.log.append((BROKE, key))
        if is_generator_function(fn):
            # Dynamo runs a generator's body where the caller steps it: the call is the sequence of what
            # it yields (its breaks are found in its body, analysed here with the call's arguments)
            return sequence(element=join_all(callee.yielded) if callee.yielded else None)
        result = join_all(callee.returns) if callee.returns else NONE_VALUE
        return _refine(result, prog.signatures.declared_return(fn))

    def _unanalysed(self, fn: FunctionInfo) -> Value:
        """The result of a call not analysed (too deep, recursive): what its annotation promises,
        else the call by its qualified name, as if the function were not in the checked files."""
        prog = self.program
        declared = prog.signatures.declared_return(fn)
        if declared is not None:
            return declared
        if fn.owner is not None and fn.owner.name and fn.closure is None:
            return Value(Kind.UNKNOWN, qualname=f"{fn.owner.name}.{fn.qualname}()")
        return UNKNOWN_VALUE

    def call_module(self, caller: FunctionEvaluator, module: Value, args: list[Value],
                    kwargs: dict[str, Value], opaque: bool) -> Value:
        """Calling an ``nn.Module`` instance runs its ``forward``, or the ``__call__`` its class defines
        in place of ``nn.Module``'s (which Dynamo runs; its ``super().__call__(...)`` runs ``forward``)."""
        prog = self.program
        if module.cls is not None:
            prog.classes.touch_class(module.cls)
            call = module.cls.instance_method("__call__")
            if call is not None:
                return self.call_function(caller, call, args, kwargs, module, opaque)
            fwd = module.cls.find_method("forward")
            if fwd is None:
                return UNKNOWN_VALUE
            return self.call_function(caller, fwd, args, kwargs, module, opaque)
        q = module.qualname or ""
        if q.startswith("torch.nn."):
            name = q.rsplit(".", 1)[-1]
            if name in K.NN_CONTAINER_CLASSES:
                return UNKNOWN_VALUE
            if name in K.NN_MULTI_OUTPUT_CLASSES:
                return sequence(element=tensor())
            return tensor()
        return UNKNOWN_VALUE

    def prepare_function(self, info: FunctionInfo) -> None:
        prog = self.program
        self.closures.append(info)
        info.owner = prog.index
        local, global_decls = local_names_of(info.node)
        info.local_names = frozenset(local)
        info.global_decls = frozenset(global_decls)


def _base_init(caller: FunctionEvaluator, fn: FunctionInfo, sink: dict[str, Value] | None) -> bool:
    """``super().__init__(...)`` of an ``__init__`` run for the attributes it binds: a base's part of the
    same construction, not a call deeper.  A chain of bases (``Miner`` -> ``BaseMiner`` ->
    ``WithDistance``) is as long as the class hierarchy, and counting each link against the call depth
    left the last base's own calls (``self.distance = self.default_distance()``) unanalysed."""
    return sink is not None and fn.name == "__init__" and caller.fn is not None and caller.fn.name == "__init__"


def _refine(value: Value, declared: Value | None) -> Value:
    """An argument's value, corrected by the parameter's annotation where they disagree."""
    if declared is None:
        return value
    if value.is_mapping and declared.is_mapping and declared.element is not None \
            and (value.element is None or value.element.kind is Kind.UNKNOWN):
        # `params: dict[str, Tensor]` passed a dict whose entries the analysis could not follow
        items = tuple(_refine(v, declared.element) for v in value.items) if value.items is not None else None
        return value.with_(element=declared.element, items=items)
    if declared.kind is Kind.PYTHON and value.kind not in (Kind.PYTHON, Kind.SIZE, Kind.SCALAR) and not (
            value.is_tensor and not value.assumed and not value.guessed):
        # (a tensor the analysis computed stays one whatever the annotation says: Dynamo does not read
        # annotations, and `-> float` over `return x.mean()` is a common slip)
        return declared
    if declared.kind is Kind.SEQUENCE and declared.element is not None and declared.element.kind is Kind.PYTHON:
        # e.g. ``tuple[int, int]``: the annotation is more trustworthy than what the analysis inferred
        if value.kind is not Kind.SEQUENCE or value.elements().kind not in (Kind.PYTHON, Kind.SIZE, Kind.SCALAR):
            return declared
    if declared.kind is Kind.TENSOR and value.kind is Kind.UNKNOWN:
        return declared
    if declared.qualname == K.ANNOTATED_CALLABLE and value.qualname == "builtins.function":
        return value.with_(element=declared.element)  # a lambda of the caller: what its annotation promises
    if value.kind is Kind.UNKNOWN and value.qualname is not None and value.qualname == declared.qualname:
        return value  # `generator: Optional[torch.Generator] = None` given the generator: not None here
    if value.kind is Kind.UNKNOWN and not value.params and value.cls is None:
        return declared  # e.g. ``list[dict[str, Tensor]]``: what the analysis could not infer
    if value.kind is Kind.SEQUENCE and declared.kind is Kind.SEQUENCE:
        if value.items is not None and declared.items is not None and len(value.items) == len(declared.items):
            return value.with_(items=tuple(_refine(v, d) for v, d in zip(value.items, declared.items)))
        if value.items is None and declared.items is not None:
            return declared if value.elements().kind is Kind.UNKNOWN else value
        if value.elements().kind is Kind.UNKNOWN and declared.element is not None:
            return value.with_(element=declared.element, items=None)
    return value


def _identities(fn: FunctionInfo, env: dict[str, Value]) -> tuple:
    """The objects whose identities the key of a call of ``fn`` with ``env`` holds (see ``_signature``)."""
    out: list[object] = [fn]
    todo = list(env.values())
    while todo:
        v = todo.pop()
        out.extend(x for x in (v.cls, v.func) if x is not None)
        todo.extend(v.items or ())
        todo.extend(v.choices or ())
        if v.element is not None:
            todo.append(v.element)
    return tuple(out)


def _signature(v: Value) -> Any:
    const = v.const if isinstance(v.const, (bool, int, float, str, type(None))) else "?"
    return (v.kind.value, v.is_bool, v.maybe_none, const if v.has_const else "-", v.qualname,
            id(v.cls) if v.cls else 0, id(v.func) if v.func else 0, v.from_weights, v.entered, v.assumed,
            v.constant, v.lifted, v.open_class, v.dynamic, v.dynamic_dims,
            tuple(_signature(i) for i in v.items) if v.items else None, v.keys,
            _signature(v.element) if v.element is not None else None,
            tuple(_signature(c) for c in v.choices) if v.choices else None)
