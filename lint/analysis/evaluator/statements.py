"""Statement handlers: assignment and binding, control flow, imports and nested definitions.

Branches are analysed separately and their environments joined; loop bodies run twice (the first time
silently) so that values carried around the loop are seen; a block that unconditionally leaves raises
:class:`_Terminated` so that code after it is not analysed with its environment.
"""
from __future__ import annotations

from typing import Callable

import libcst as cst

from dynalint.analysis import events as E
from dynalint.analysis.calls import call_special, compile_state, iterated
from dynalint.analysis.evaluator.annotations import annotation_value
from dynalint.analysis.evaluator.arith import _AUGMENTED
from dynalint.analysis.evaluator.conditions import _dtype_specialised
from dynalint.analysis.loop_state import carried_changes
from dynalint.analysis.module_index import import_bindings
from dynalint.analysis.syntax import contains_exit, dotted_name, simple_statements, suites_between, walk
from dynalint.analysis.values import (NONE_VALUE, SIZE_VALUE, UNKNOWN_VALUE, Kind, Value, dimension_size,
                                      join, join_all, python, resumed, sequence)


_EXPLICIT_BREAKS = frozenset({"torch._dynamo.graph_break", "torch.compiler.graph_break"})
#: attributes of a tensor whose assignment Dynamo does not trace, on an input, a parameter or a tensor made in
#: the graph (measured on torch 2.13; ``t.grad = None``, ``param.data = ...`` and attributes of the code's own
#: are traced)
_TENSOR_FIELDS = frozenset({"requires_grad"})
#: context managers whose ``__enter__`` returns the manager itself (``with ExitStack() as stack``)
_ENTERED_AS_ITSELF = frozenset({"contextlib.ExitStack()"})


class _Terminated(Exception):
    """Raised internally when a block unconditionally leaves (return/raise/break/continue)."""


#: simple statements after which the rest of the block runs on (a resumed frame after a break)
_RESUMABLE = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Expr)


class StatementHandlers:
    """The statement part of :class:`~dynalint.analysis.evaluator.core.FunctionEvaluator`."""

    def run_body(self, body: cst.BaseSuite) -> None:
        try:
            self.block(body)
        except _Terminated:
            pass
        if self.fn is not None and body is self.fn.node.body:
            self.report_eager_comprehensions()

    def block(self, suite: cst.BaseSuite) -> None:
        top = self.emit and self.fn is not None and suite is self.fn.node.body
        for i, stmt in enumerate(simple_statements(suite)):
            seen = len(self.p.events)
            if top:
                self.top_index, self.top_statement = i, stmt
                self.loop_broke = self.top_calls_broke = False
            self.callee_broke = False
            self.stmt(stmt)
            self.calls_broke = self.calls_broke or self.callee_broke
            self.top_calls_broke = self.top_calls_broke or self.callee_broke
            # whether an event of the statement (or of a function it called) may break: asked of its
            # events once for the questions below (a call's events are many, and each enclosing block asks)
            broke: bool | None = None
            if self.emit and self.loop_depth > 0 and not self.loop_broke \
                    and (self.callee_broke or (broke := any(map(self.p.may_break_at, self.p.events[seen:])))):
                self.loop_broke = True
            if top:
                broke = self.note_top_statement(i, seen, self.loop_broke, broke)
            watched = self.emit and self.loop_depth == 0 and self.fn is not None
            if (watched or isinstance(stmt, _RESUMABLE)) and self.loop_depth == 0 \
                    and (self.callee_broke
                         or (broke if broke is not None else any(map(self.p.may_break_at, self.p.events[seen:])))):
                if watched:  # (what the frame resumed after a break there receives)
                    self.statement = stmt
                    env = self.env
                    self.report(E.ResumeInputsEvent, stmt,
                                sizes=tuple(k for k, v in env.items() if v.kind is Kind.SIZE and v.dynamic),
                                plain=frozenset(k for k, v in env.items() if not_tensor_related(v)))
                if isinstance(stmt, _RESUMABLE):
                    # the statement broke the graph (maybe inside a function it called): the rest runs
                    # in a resumed frame, which has the tensors alive now as inputs.  Also in a function
                    # called from a loop: the break makes Dynamo run the loop's frame eagerly, and this
                    # function is then a frame of its own
                    self.env = {k: resumed(v) for k, v in self.env.items()}

    def runs_whenever_called(self) -> bool:
        """The current statement runs whenever the function does: a statement of its body, or one whose
        enclosing blocks are all :attr:`sure_suites` (a loop over a module's parameters in a branch the
        analysis decided)."""
        if self.statement is self.top_statement and self.loop_depth == 0:
            return True
        if not self.sure_suites or self.top_statement is None:
            return False
        blocks = suites_between(self.top_statement, self.statement)
        return blocks is not None and all(any(b is s for s in self.sure_suites) for b in blocks)

    def _assign(self, node: cst.Assign) -> None:
        value = self.expr(node.value)
        for t in node.targets:
            self.bind(t.target, value, node)

    def _ann_assign(self, node: cst.AnnAssign) -> None:
        if node.value is None:
            return
        value = self.expr(node.value)
        ann = annotation_value(self.p, node.annotation.annotation)
        if ann is not None and value.kind is Kind.UNKNOWN:
            value = ann
        self.bind(node.target, value, node)

    def _aug_assign(self, node: cst.AugAssign) -> None:
        rhs = self.expr(node.value)
        target = node.target
        if isinstance(target, cst.Name):
            # `global step; step += 1` reads the global: Dynamo guards on the value it had at the call
            declared_global = self.fn is not None and target.value in self.fn.global_decls
            old = self.lookup(target, record=declared_global)
            self.report(E.ArithmeticEvent, node, operands=(old, rhs))
            op = _AUGMENTED.get(type(node.operator))
            new = self.binop(old, rhs, op() if op is not None else node.operator)
            if old.kind is Kind.TENSOR and not old.maybe_none:
                # on a tensor it is an in-place operation: the tensor keeps its dtype (`mask &= other`)
                new = new.with_(is_bool=old.is_bool) if new.kind is Kind.TENSOR else old
            self.env[target.value] = new
        elif isinstance(target, cst.Attribute):
            base = self.expr(target.value)
            old = self.attribute(base, target.attr.value, target)
            self.report(E.ArithmeticEvent, node, operands=(old, rhs))  # (`self.events += 1`: Python numbers)
            self.store_field(target, None)
            held = self.held_object(target.value, base) or self.argument_object(target.value, base)
            if self.is_state(target.value) or base.is_class or held is not None:
                owner = base.cls if base.is_class or held is not None else self.fn.cls if self.fn else None
                self.report(E.AttributeEvent, target, cls=owner, name=target.attr.value,
                            value=self.binop(old, rhs, node.operator), write=True, augmented=True,
                            on_class=base.is_class, path=held or "")
        elif isinstance(target, cst.Subscript):
            self.subscript(target, store=True, augmented=True, operand=rhs)
            self.store_entry(target, None)

    def _expr_stmt(self, node: cst.Expr) -> None:
        self.expr(node.value)
        if self.loop_depth == 0 and self._always_breaks(node.value):
            # the graph ends here and the rest runs in a resumed frame: the tensors alive now are its
            # inputs, and a tensor folded from Python numbers is one of them too (no longer a constant)
            self.env = {k: resumed(v) for k, v in self.env.items()}

    def _always_breaks(self, value: cst.BaseExpression) -> bool:
        """``print(...)`` or ``torch._dynamo.graph_break()`` as a statement: a break whatever the arguments."""
        if not isinstance(value, cst.Call):
            return False
        if self.is_builtin(value.func, "print"):
            return "builtins.print" not in self.p.index.reorderable  # a deferred print does not break
        return self.silent_expr(value.func).qualname in _EXPLICIT_BREAKS

    def _return(self, node: cst.Return) -> None:
        value = self.expr(node.value) if node.value is not None else NONE_VALUE
        # a number taken from tensor data, returned (`return correct, probs.mean()`): Python needs its value to
        # hand it back, so a frame resumed after the break that made it is guarded on it (measured on torch
        # 2.13: `___stack0 == 5`); one the `return` itself makes (`return t.sum().item()`) is handed back by a
        # frame that does nothing else, which Dynamo skips
        returned = node.value.elements if isinstance(node.value, cst.Tuple) else ()
        for item, element in zip(value.items or (), returned):
            if isinstance(element, cst.Element) and not _made_here(item, node):
                self.use_scalar(item, element.value, "return")
        if not returned and node.value is not None and not _made_here(value, node):
            self.use_scalar(value, node.value, "return")
        self.returns.append(value)
        raise _Terminated

    def _raise(self, node: cst.Raise) -> None:
        if node.exc is not None:
            self.expr(node.exc)
        raise _Terminated

    def _jump(self, node: cst.CSTNode) -> None:
        raise _Terminated

    def _assert(self, node: cst.Assert) -> None:
        self.condition(node.test, "assert", node)
        if node.msg is not None:
            self.expr(node.msg)

    def _del(self, node: cst.Del) -> None:
        if isinstance(node.target, cst.Subscript):
            self.subscript(node.target, store=True)
            self.store_entry(node.target, None)

    def _import(self, node: cst.Import | cst.ImportFrom) -> None:
        for name, q in import_bindings(node).items():
            self.env[name] = self.p.names.qualified_value(q)

    def _if(self, node: cst.If, construct: str = "if") -> None:
        self.statement = node
        truth = self.condition(node.test, construct, node, exits_loop=self.loop_depth > 0 and contains_exit(node.body))
        narrowed_true, narrowed_false = self.narrowing(node.test)
        branches: list[dict[str, Value]] = []
        start = self.env
        if truth is not False:
            unjudged = truth is None and (_dtype_specialised(node.test) or self.type_test_fails(node.test))
            self.env = {**start, **narrowed_true}
            emit = self.emit
            if unjudged:
                self.emit = False  # a path taken only for some dtypes, or maybe never: not known statically
            if truth is True:
                self.sure_suites.append(node.body)
            try:
                if self._run_branch(node.body):
                    branches.append(self.env)
            finally:
                self.emit = emit
                if truth is True:
                    self.sure_suites.pop()
        if truth is not True:
            self.env = {**start, **narrowed_false}
            ok = True
            if isinstance(node.orelse, cst.If):
                try:
                    self._if(node.orelse, "elif")
                except _Terminated:
                    ok = False
            elif isinstance(node.orelse, cst.Else):
                ok = self._run_branch(node.orelse.body)
            if ok:
                branches.append(self.env)
        self.env = start
        if not branches:
            raise _Terminated
        self.env = _join_envs(branches)

    def _match(self, node: cst.Match) -> None:
        """``match subject: case ...:``: the subject is evaluated, each case's guard is a test, and each case
        body a branch the analysis does not decide (the names a pattern captures are not known, but the
        subject itself, ``case g if g > 0.5:``)."""
        self.statement = node
        subject = self.expr(node.subject)
        start = self.env
        branches: list[dict[str, Value]] = []
        exhaustive = False
        for case in node.cases:
            self.env = {**start, **{name: UNKNOWN_VALUE for name in _captured(case.pattern)}}
            pattern = case.pattern
            if type(pattern) is cst.MatchAs and pattern.pattern is None and pattern.name is not None:
                self.env[pattern.name.value] = subject  # `case g:` binds the subject as it is
            if case.guard is not None:
                self.condition(case.guard, "if", node)
            elif type(case.pattern) is cst.MatchAs and case.pattern.pattern is None:
                exhaustive = True  # `case _:` or `case name:`
            if self._run_branch(case.body):
                branches.append(self.env)
        if not exhaustive:
            branches.append(start)
        self.env = start
        if not branches:
            raise _Terminated
        self.env = _join_envs(branches)

    def _run_branch(self, body: cst.BaseSuite) -> bool:
        """Run a block; False if it unconditionally leaves."""
        try:
            self.block(body)
        except _Terminated:
            return False
        return True

    def _loop_body(self, run_once: Callable[[], None], body: cst.BaseSuite) -> None:
        """Run a loop body twice (the first time silently) so loop-carried values are seen."""
        start = dict(self.env)
        sums = _accumulated(body)
        emit, self.emit = self.emit, False
        self.loop_depth += 1
        self.loop_bodies.append(body)
        try:
            try:
                run_once()
            except _Terminated:
                pass
            self.env = _join_loop_envs(start, self.env, sums)
            self.emit = emit
            try:
                run_once()
            except _Terminated:
                pass
        finally:
            self.emit = emit
            self.loop_depth -= 1
            self.loop_bodies.pop()
        self.env = _join_loop_envs(start, self.env, sums)

    def _for(self, node: cst.For) -> None:
        self.statement = node
        it = self.expr(node.iter)
        range_args = None
        if isinstance(node.iter, cst.Call) and self.is_builtin(node.iter.func, "range"):
            range_args = tuple(self.expr(a.value) for a in node.iter.args)
        if it.params and it.kind is Kind.UNKNOWN:
            self.not_tensor_evidence(it)
        self.report(E.ForLoopEvent, node.iter, iterable=it, range_args=range_args)
        element = iterated(self, it)

        def once() -> None:
            self.statement = node
            self.bind(node.target, element, node)
            self.block(node.body)

        sure = _runs_at_least_once(node.iter, it)
        if sure:
            self.sure_suites.append(node.body)
        try:
            self._loop_body(once, node.body)
        finally:
            if sure:
                self.sure_suites.pop()
        if node.orelse is not None:
            self._run_branch(node.orelse.body)

    def _while(self, node: cst.While) -> None:
        def once() -> None:
            self.statement = node
            truth = self.condition(node.test, "while", node)
            if truth is False:
                raise _Terminated
            self.block(node.body)

        entering = dict(self.env) if self.emit else {}  # read only when the loop is reported
        outer, self.calls_broke = self.calls_broke, False
        try:
            self._loop_body(once, node.body)
            body_calls_break = self.calls_broke
        finally:
            self.calls_broke = outer or self.calls_broke
        if self.emit:
            self.statement = node
            self._loop_state(node, entering, body_calls_break)
        if node.orelse is not None:
            self._run_branch(node.orelse.body)

    def _loop_state(self, node: cst.While, entering: dict[str, Value], body_calls_break: bool) -> None:
        """Report the loop with the Python values its body changes from their own value (a counter, an
        accumulator, a list it grows): the inputs of the frame Dynamo resumes at the loop header."""
        carried = []
        for change in carried_changes(node.body):
            v = entering.get(change.name)
            if v is None or v.is_bool or (v.has_const and v.const is None):
                continue
            if v.kind is Kind.SEQUENCE:
                what = "length"
            elif v.kind is Kind.TENSOR and change.grows:
                what = "size"
            elif v.kind is Kind.SIZE or (v.kind is Kind.PYTHON and v.has_const and isinstance(v.const, (int, float))):
                what = "number"
            elif v.kind is Kind.PYTHON and isinstance(v.const, str):
                what = "string"
            else:
                continue
            carried.append(E.CarriedState(change.name, change.node, v, what))
        self.report(E.WhileLoopEvent, node, carried=tuple(carried), body_calls_break=body_calls_break)

    def _with(self, node: cst.With) -> None:
        managers = []
        enter_broke = False
        for item in node.items:
            v = self.expr(item.item)
            broke_before, self.callee_broke = self.callee_broke, False
            entered = call_special(self, v, "__enter__", [])  # (of a class of the checked code)
            enter_broke = enter_broke or self.callee_broke
            self.callee_broke = broke_before or self.callee_broke
            self.report(E.ContextManagerEvent, item.item, value=v, enter_broke=enter_broke)
            if entered is not None:
                managers.append(v)
            if item.asname is not None:
                self.bind(item.asname.name, entered if entered is not None
                          else v if v.qualname in _ENTERED_AS_ITSELF else UNKNOWN_VALUE, node)
        self.block(node.body)
        # a break in `__enter__` makes Dynamo run the whole function eagerly (it cannot resume in the middle of
        # entering the block): `__exit__` is then not traced, and nothing in it breaks
        emit, self.emit = self.emit, self.emit and not enter_broke
        try:
            for v in reversed(managers):
                call_special(self, v, "__exit__", [NONE_VALUE, NONE_VALUE, NONE_VALUE])
        finally:
            self.emit = emit

    def _try(self, node: cst.Try) -> None:
        start = dict(self.env)
        envs = []
        seen, calls_broke, self.calls_broke = len(self.p.events), self.calls_broke, False
        ok = self._run_branch(node.body)
        if self.emit and self.fn is not None and node is self.top_statement and self.loop_depth == 0 \
                and (self.calls_broke or any(map(self.p.may_break_at, self.p.events[seen:]))):
            self.eager_from.append(self.top_index)  # (a break in its body: the rest runs eagerly)
        self.calls_broke = calls_broke or self.calls_broke
        if ok and node.orelse is not None:
            ok = self._run_branch(node.orelse.body)
        if ok:
            envs.append(self.env)
        for h in node.handlers if not self._cannot_raise(node.body) else ():
            self.env = _join_envs([start, self.env])
            self.statement = h
            if h.type is not None:
                self.expr(h.type)
            if h.name is not None:
                self.bind(h.name.name, UNKNOWN_VALUE, h)
            if self._run_branch(h.body):
                envs.append(self.env)
        self.env = _join_envs(envs) if envs else start
        if node.finalbody is not None:
            self.block(node.finalbody.body)
        if not envs:
            raise _Terminated

    def _cannot_raise(self, body: cst.BaseSuite) -> bool:
        """A ``try`` body that only imports torch and returns or binds what a capture-state query
        of torch answers (``return torch.compiler.is_compiling()``): torch imports and those
        functions exist wherever Dynamo traces, so the handlers never run there."""
        for stmt in simple_statements(body):
            if isinstance(stmt, cst.Pass):
                continue
            if isinstance(stmt, (cst.Import, cst.ImportFrom)):
                if isinstance(stmt, cst.ImportFrom) and (stmt.relative or stmt.module is None):
                    return False
                modules = [dotted_name(a.name) or "" for a in stmt.names] if isinstance(stmt, cst.Import) \
                    else [dotted_name(stmt.module) or ""]
                if not all(m == "torch" or m.startswith("torch.") for m in modules):
                    return False
                continue
            if isinstance(stmt, cst.Assign) and not all(isinstance(t.target, cst.Name) for t in stmt.targets):
                return False
            value = stmt.value if isinstance(stmt, (cst.Return, cst.Assign, cst.Expr)) else None
            if not isinstance(value, cst.Call) or value.args:
                return False
            q = self.silent_expr(value.func).qualname
            if q is None or not q.startswith("torch.") or compile_state(q) is None:
                return False
        return True

    def _funcdef(self, node: cst.FunctionDef) -> None:
        from dynalint.analysis.module_index import FunctionInfo, decorated

        for d in node.decorators:
            self.expr(d.decorator)
        parent = self.fn
        decorators, compiled, disabled = decorated(self.p.index, node)
        for d, q in zip(node.decorators, decorators):
            self.report(E.DecoratorEvent, d.decorator, qualname=q)
        info = FunctionInfo(node=node, name=node.name.value,
                            qualname=f"{parent.qualname}.{node.name.value}" if parent else node.name.value,
                            decorators=decorators, compile_decorated=compiled, disabled=disabled,
                            closure=self.env, outer=(parent.outer or parent) if parent else None)
        self.p.calls.prepare_function(info)
        if self.emit and not disabled:  # (a disabled function's body runs eagerly: nothing in it breaks)
            self.p.calls.note_nested(info)
        self.env[node.name.value] = Value(Kind.FUNCTION, func=info)

    def _classdef(self, node: cst.ClassDef) -> None:
        self.report(E.ClassStatementEvent, node.name)
        self.env[node.name.value] = UNKNOWN_VALUE

    # ------------------------------------------------------------------ binding
    def bind(self, target: cst.CSTNode, value: Value, stmt: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            if value.kind is Kind.UNKNOWN and not value.params and value.cls is None and not value.choices \
                    and self.fn is not None:
                declared = self.p.signatures.declared_types(self.fn).get(target.value)
                if declared is not None:
                    value = declared  # an annotated parameter keeps its type (``x = helper(x)``)
            self.env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            self.not_tensor_evidence(value)  # `h, w = dims`: a parameter unpacked into names is a tuple, not a tensor
            elems = target.elements
            starred = any(isinstance(e, cst.StarredElement) for e in elems)
            if value.kind is Kind.SIZE and value.dynamic_dims:
                # `b, c, h, w = x.shape`: each name is the size of its dimension, counted from the end after a
                # starred name (`b, *_, w = x.shape`)
                at = next((i for i, e in enumerate(elems) if isinstance(e, cst.StarredElement)), len(elems))
                for i, e in enumerate(elems):
                    index = python(i if i < at else i - len(elems))
                    size = sequence(element=SIZE_VALUE) if i == at else dimension_size(value, index)
                    self.bind(e.value, size, stmt)
            elif value.items is not None and len(value.items) == len(elems) and not starred:
                for e, v in zip(elems, value.items):
                    self.bind(e.value, v, stmt)
            elif value.items is not None and starred and len(value.items) >= len(elems) - 1:
                # `img, *_ = convert(img)`: the names around the starred one take the items at their ends
                at = next(i for i, e in enumerate(elems) if isinstance(e, cst.StarredElement))
                after = len(elems) - at - 1
                for e, v in zip(elems[:at], value.items):
                    self.bind(e.value, v, stmt)
                rest = value.items[at:len(value.items) - after]
                self.bind(elems[at].value, sequence(items=list(rest), element=join_all(rest) if rest else None), stmt)
                for e, v in zip(elems[at + 1:], value.items[len(value.items) - after:]):
                    self.bind(e.value, v, stmt)
            else:
                el = value.elements()
                for e in elems:
                    if isinstance(e, cst.StarredElement):
                        self.bind(e.value, sequence(element=el), stmt)
                    else:
                        self.bind(e.value, el, stmt)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, sequence(element=value.elements()), stmt)
        elif isinstance(target, cst.Attribute):
            base = self.expr(target.value)
            if base.is_tensor and not base.maybe_none and self.runs_whenever_called() and (
                    target.attr.value in _TENSOR_FIELDS
                    or (target.attr.value == "data" and not (base.entered or base.assumed))):
                # (only where it runs whenever the function does: a branch the analysis cannot decide,
                # such as a training-only switch, may not run under the compiler at all)
                self.report(E.TensorAttributeStoreEvent, target, name=target.attr.value)
            self.store_field(target, value)
            if self.is_self(target.value):
                if self.attr_sink is not None:
                    self.attr_sink[target.attr.value] = value
                self.use_scalar(value, target)
                if self.is_state(target.value):
                    self.report(E.AttributeEvent, target, cls=self.fn.cls if self.fn else None,
                                name=target.attr.value, value=value, write=True)
            elif base.is_class:
                self.report(E.AttributeEvent, target, cls=base.cls, name=target.attr.value, value=value, write=True,
                            on_class=True)
            elif (held := self.held_object(target.value, base)) is not None:
                self.report(E.AttributeEvent, target, cls=base.cls, name=target.attr.value, value=value,
                            write=True, path=held)
        elif isinstance(target, cst.Subscript):
            self.use_scalar(value, target)
            self.subscript(target, store=True)
            self.store_entry(target, value)

    def forget_entries(self, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.Name):
            d = self.env.get(node.value)
            if d is not None and d.keys is not None:
                self.env[node.value] = d.with_(keys=None, items=None)

    def grow_sequence(self, node: cst.BaseExpression, added: Value) -> None:
        """``xs.append(v)`` (``insert``, ``extend`` by each of its elements) on a list bound to a local name:
        its elements are what it held joined with ``v`` (those of a list made empty, ``v``); its length is no
        longer known."""
        if not isinstance(node, cst.Name):
            return
        xs = self.env.get(node.value)
        if xs is None or xs.kind is not Kind.SEQUENCE:
            return
        empty = xs.items == () or (xs.items is None and xs.element is None)
        self.env[node.value] = sequence(element=added if empty else join(xs.elements(), added)).with_(
            params=xs.params)

    def store_field(self, target: cst.Attribute, value: Value | None) -> None:
        """``p.n = v`` on a record built here: the field holds ``v`` now (``None``: not known).  So does an
        attribute set on a local object of a plain class of the checked code (``st = Stats(); st.total =
        x.sum()``), whose other attributes are the class's."""
        if not isinstance(target.value, cst.Name):
            return
        obj = self.env.get(target.value.value)
        if obj is not None and obj.keys is None and value is not None and obj.kind is Kind.UNKNOWN \
                and obj.cls is not None and not obj.cls.is_module and not obj.choices and not obj.is_class \
                and not self.is_self(target.value):
            self.env[target.value.value] = obj.with_(keys=(target.attr.value,), items=(value,))
            return
        self._set_entry(target.value, target.attr.value if value is not None else None, value)

    def store_entry(self, target: cst.Subscript, value: Value | None) -> None:
        """``d["k"] = v`` into a dict whose keys are known: the key holds ``v`` now (``None``: a value
        not known, or the key deleted); any other store into it forgets its keys."""
        if not isinstance(target.value, cst.Name):
            return
        key = target.slice[0].slice if len(target.slice) == 1 else None
        name = key.value.evaluated_value if isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString) \
            else None
        self._set_entry(target.value, name if isinstance(name, str) and value is not None else None, value)

    def _set_entry(self, node: cst.Name, key: str | None, value: Value | None) -> None:
        d = self.env.get(node.value)
        if d is None or d.keys is None or d.items is None:
            return
        if key is None or value is None:
            self.forget_entries(node)
            return
        entries = dict(zip(d.keys, d.items))
        entries[key] = value
        self.env[node.value] = d.with_(keys=tuple(entries), items=tuple(entries.values()),
                                       element=join(d.element, value) if d.element is not None else None)


def _accumulated(body: cst.BaseSuite) -> frozenset[str]:
    """Names a loop body adds to with arithmetic on their own value (``total += x``,
    ``total = total + x``)."""
    return frozenset(c.name for c in carried_changes(body) if isinstance(c.node, cst.AugAssign) or (
        isinstance(c.node, cst.Assign) and isinstance(c.node.value, cst.BinaryOperation)))


def _join_loop_envs(start: dict[str, Value], after: dict[str, Value], sums: frozenset[str]) -> dict[str, Value]:
    """The variables after a loop body, joined with their values before it.  A number the body adds
    tensors to (``total = 0.0`` then ``total += t.sum()``: a Python number plus a tensor is a tensor)
    stays a tensor: Dynamo unrolls the loop, and the number is left only when the loop does not run,
    where the code that uses the sum as a tensor would fail anyway."""
    out = _join_envs([start, after])
    for k in sums:
        v, before = after.get(k), start.get(k)
        if v is None:
            continue
        if v.kind is Kind.TENSOR and before is not None and before.kind is Kind.PYTHON and not before.is_bool \
                and before.has_const and type(before.const) in (int, float):
            out[k] = v
    return out


def _join_envs(envs: list[dict[str, Value]]) -> dict[str, Value]:
    if len(envs) == 1:
        return dict(envs[0])
    out: dict[str, Value] = {}
    keys: set[str] = set()
    for e in envs:
        keys.update(e)
    for k in keys:
        vals = [e.get(k) for e in envs]
        if any(v is None for v in vals):
            present = [v for v in vals if v is not None]
            # bound on some paths only: keep what we know (reading it unbound would raise anyway)
            out[k] = join_all(present)
        else:
            out[k] = join_all(vals)  # type: ignore[arg-type]
    return out


#: the methods of an ``nn.Module`` that iterate over its parameters: a module has some
_PARAMETER_ITERATORS = frozenset({"parameters", "named_parameters"})


def _runs_at_least_once(iterable: cst.BaseExpression, value: Value) -> bool:
    """``for p in net.parameters():`` over a module's parameters, or over a list the analysis knows is not
    empty (``for net in [self.disc]:``): the body runs at least once."""
    if value.kind is not Kind.SEQUENCE:
        return False
    if value.items is not None:
        return len(value.items) > 0
    return isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) \
        and iterable.func.attr.value in _PARAMETER_ITERATORS and not iterable.args


def _captured(pattern: cst.MatchPattern) -> set[str]:
    """The names a ``case`` pattern binds (``case Point(x=px):``, ``case [first, *rest]:``)."""
    names = set()
    for n in walk(pattern):
        if isinstance(n, (cst.MatchAs, cst.MatchStar)) and n.name is not None:
            names.add(n.name.value)
        elif isinstance(n, cst.MatchMapping) and n.rest is not None:
            names.add(n.rest.value)
    return names


def not_tensor_related(v: Value, depth: int = 3) -> bool:
    """``v`` holds nothing Dynamo counts as tensor-related when it decides whether to compile a frame: a
    Python number, string or function, a list, tuple or dict of such values, or an object of a class of the
    checked code that is no module (Dynamo looks into lists, tuples, dicts and named tuples, not into other
    objects: ``has_tensor_in_frame``)."""
    if v.kind in (Kind.PYTHON, Kind.SIZE, Kind.SCALAR):
        if v.is_mapping or v.element is not None:
            return v.element is not None and depth > 0 and not_tensor_related(v.element, depth - 1)
        return not (v.qualname or "").startswith("numpy")  # (a NumPy scalar counts, as an array does)
    if v.kind is Kind.SEQUENCE:
        parts = v.items if v.items is not None else (v.element,) if v.element is not None else None
        return parts is not None and depth > 0 and all(not_tensor_related(p, depth - 1) for p in parts)
    if v.kind is Kind.FUNCTION:
        return v.func is not None
    if v.kind is Kind.UNKNOWN and v.cls is not None and not v.choices and not v.maybe_none:
        return v.cls.plain
    return False


def _made_here(value: Value, statement: cst.CSTNode) -> bool:
    """``value`` was made by an expression of ``statement`` itself (its ``origin`` lies there)."""
    return value.origin is not None and any(n is value.origin for n in walk(statement))
