"""Per-function dataflow: abstract interpretation of one function body.

The evaluator walks statements in order, keeping an environment from local
names to :class:`~dynalint.analysis.values.Value`, and reports events
(:mod:`dynalint.analysis.events`) for every construct rules care about.
Branches are analysed separately and joined; loop bodies are run twice so that
values carried around the loop are seen; calls into functions of the same
file are analysed with the argument values of the call (see
:mod:`dynalint.analysis.program`).

A first, silent pass over a function with untyped parameters collects
*evidence* of what each parameter is (``p.sum()`` says tensor, ``if p:`` or
``p.items()`` say not); the reporting pass then starts from those types.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

import libcst as cst

from dynalint.analysis import knowledge as K
from dynalint.analysis import events as E
from dynalint.analysis.module_index import import_bindings
from dynalint.analysis.syntax import contains_exit, dotted_name, simple_statements
from dynalint.analysis.values import (
    NO_CONST,
    NONE_VALUE,
    PYTHON_VALUE,
    SIZE_VALUE,
    UNKNOWN_VALUE,
    Kind,
    Value,
    join,
    join_all,
    mapping,
    merge_params,
    python,
    sequence,
    tensor,
)

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import FunctionInfo
    from dynalint.analysis.interface import ProgramView

import builtins as _builtins

_BUILTIN_NAMES = frozenset(dir(_builtins))


@dataclass
class Evidence:
    """What the uses of each parameter say about its type."""

    positive: set[str] = field(default_factory=set)
    negative: set[str] = field(default_factory=set)

    def tensor_params(self) -> set[str]:
        return self.positive - self.negative


class _Terminated(Exception):
    """Raised internally when a block unconditionally leaves (return/raise/break/continue)."""


class FunctionEvaluator:
    """Abstract interpreter for one function body in one calling context."""

    def __init__(
        self,
        program: "ProgramView",
        fn: "FunctionInfo | None",
        env: dict[str, Value],
        *,
        emit: bool,
        depth: int = 0,
        evidence: Evidence | None = None,
    ) -> None:
        self.p = program
        self.fn = fn
        self.env = env
        self.emit = emit
        self.depth = depth
        self.evidence = evidence
        self.loop_depth = 0
        self.outer_loop = False
        """The call being analysed sits inside a loop of the caller."""
        self.attr_sink: dict[str, Value] | None = None
        """When analysing ``__init__``: where ``self.<attr> = value`` bindings are recorded."""
        self.statement: cst.CSTNode = fn.node if fn is not None else program.index.module
        self.returns: list[Value] = []
        self.self_name: str | None = None
        if fn is not None and fn.cls is not None and not fn.is_static:
            names = fn.param_names()
            self.self_name = names[0] if names else None

    # ------------------------------------------------------------------ events
    def report(self, event_type: type, node: cst.CSTNode, **kw: Any) -> None:
        if self.emit and self.fn is not None:
            self.p.events.append(
                event_type(node=node, statement=self.statement, function=self.fn,
                    in_loop=self.loop_depth > 0 or self.outer_loop, **kw)
            )

    def tensor_evidence(self, v: Value) -> None:
        if self.evidence is not None and v.params and v.kind is Kind.UNKNOWN:
            self.evidence.positive.update(v.params)

    def not_tensor_evidence(self, v: Value) -> None:
        """Record that a parameter itself is used in a way tensors are not (``if p:``, ``p.items()``)."""
        if self.evidence is not None and v.param is not None:
            self.evidence.negative.add(v.param)

    # ------------------------------------------------------------------ statements
    def run_body(self, body: cst.BaseSuite) -> None:
        try:
            self.block(body)
        except _Terminated:
            pass

    def block(self, suite: cst.BaseSuite) -> None:
        for stmt in simple_statements(suite):
            self.stmt(stmt)

    def stmt(self, node: cst.CSTNode) -> None:
        self.statement = node
        handler = _STMT_HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node)

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
            old = self.lookup(target, record=False)
            op = _AUGMENTED.get(type(node.operator))
            self.env[target.value] = self.binop(old, rhs, op() if op is not None else node.operator)
        elif isinstance(target, cst.Attribute):
            base = self.expr(target.value)
            old = self.attribute(base, target.attr.value, target)
            if self.is_self(target.value):
                self.report(E.AttributeEvent, target, cls=self.fn.cls if self.fn else None,
                            name=target.attr.value, value=self.binop(old, rhs, node.operator), write=True,
                            augmented=True)
        elif isinstance(target, cst.Subscript):
            self.subscript(target, store=True, augmented=True)

    def _expr_stmt(self, node: cst.Expr) -> None:
        self.expr(node.value)

    def _return(self, node: cst.Return) -> None:
        self.returns.append(self.expr(node.value) if node.value is not None else NONE_VALUE)
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

    def _import(self, node: cst.Import | cst.ImportFrom) -> None:
        for name, q in import_bindings(node).items():
            self.env[name] = self.p.qualified_value(q)

    def _if(self, node: cst.If, construct: str = "if") -> None:
        self.statement = node
        truth = self.condition(node.test, construct, node, exits_loop=self.loop_depth > 0 and contains_exit(node.body))
        narrowed_true, narrowed_false = self.narrowing(node.test)
        branches: list[dict[str, Value]] = []
        start = self.env
        if truth is not False:
            self.env = {**start, **narrowed_true}
            emit = self.emit
            if truth is None and _dtype_specialised(node.test):
                self.emit = False  # a path taken only for some dtypes: not known statically
            try:
                if self._run_branch(node.body):
                    branches.append(self.env)
            finally:
                self.emit = emit
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

    def _run_branch(self, body: cst.BaseSuite) -> bool:
        """Run a block; False if it unconditionally leaves."""
        try:
            self.block(body)
        except _Terminated:
            return False
        return True

    def _loop_body(self, run_once: Callable[[], None]) -> None:
        """Run a loop body twice (the first time silently) so loop-carried values are seen."""
        start = dict(self.env)
        emit, self.emit = self.emit, False
        self.loop_depth += 1
        try:
            try:
                run_once()
            except _Terminated:
                pass
            self.env = _join_envs([start, self.env])
            self.emit = emit
            try:
                run_once()
            except _Terminated:
                pass
        finally:
            self.emit = emit
            self.loop_depth -= 1
        self.env = _join_envs([start, self.env])

    def _for(self, node: cst.For) -> None:
        self.statement = node
        it = self.expr(node.iter)
        range_args = None
        if isinstance(node.iter, cst.Call) and self.is_builtin(node.iter.func, "range"):
            range_args = tuple(self.expr(a.value) for a in node.iter.args)
        if it.params and it.kind is Kind.UNKNOWN:
            self.not_tensor_evidence(it)
        self.report(E.ForLoopEvent, node.iter, iterable=it, range_args=range_args)
        element = it.elements()

        def once() -> None:
            self.statement = node
            self.bind(node.target, element, node)
            self.block(node.body)

        self._loop_body(once)
        if node.orelse is not None:
            self._run_branch(node.orelse.body)

    def _while(self, node: cst.While) -> None:
        def once() -> None:
            self.statement = node
            truth = self.condition(node.test, "while", node)
            if truth is False:
                raise _Terminated
            self.block(node.body)

        self._loop_body(once)
        if node.orelse is not None:
            self._run_branch(node.orelse.body)

    def _with(self, node: cst.With) -> None:
        for item in node.items:
            v = self.expr(item.item)
            self.report(E.ContextManagerEvent, item.item, value=v)
            if item.asname is not None:
                self.bind(item.asname.name, UNKNOWN_VALUE, node)
        self.block(node.body)

    def _try(self, node: cst.Try) -> None:
        start = dict(self.env)
        envs = []
        ok = self._run_branch(node.body)
        if ok and node.orelse is not None:
            ok = self._run_branch(node.orelse.body)
        if ok:
            envs.append(self.env)
        for h in node.handlers:
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

    def _funcdef(self, node: cst.FunctionDef) -> None:
        from dynalint.analysis.module_index import FunctionInfo

        for d in node.decorators:
            self.expr(d.decorator)
        parent = self.fn
        info = FunctionInfo(node=node, name=node.name.value,
                            qualname=f"{parent.qualname}.{node.name.value}" if parent else node.name.value,
                            closure=self.env)
        self.p.prepare_function(info)
        if self.emit:
            self.p.note_nested(info)
        self.env[node.name.value] = Value(Kind.FUNCTION, func=info)

    def _classdef(self, node: cst.ClassDef) -> None:
        self.env[node.name.value] = UNKNOWN_VALUE

    # ------------------------------------------------------------------ binding
    def bind(self, target: cst.CSTNode, value: Value, stmt: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            if value.kind is Kind.UNKNOWN and not value.params and value.cls is None and self.fn is not None:
                declared = self.p.declared_types(self.fn).get(target.value)
                if declared is not None:
                    value = declared  # an annotated parameter keeps its type (``x = helper(x)``)
            self.env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            self.not_tensor_evidence(value)  # `h, w = dims`: a parameter unpacked into names is a tuple, not a tensor
            elems = target.elements
            starred = any(isinstance(e, cst.StarredElement) for e in elems)
            if value.items is not None and len(value.items) == len(elems) and not starred:
                for e, v in zip(elems, value.items):
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
            self.expr(target.value)
            if self.is_self(target.value):
                if self.attr_sink is not None:
                    self.attr_sink[target.attr.value] = value
                self.use_scalar(value, target)
                self.report(E.AttributeEvent, target, cls=self.fn.cls if self.fn else None,
                            name=target.attr.value, value=value, write=True)
        elif isinstance(target, cst.Subscript):
            self.use_scalar(value, target)
            self.subscript(target, store=True)

    def narrowing(self, test: cst.BaseExpression) -> tuple[dict[str, Value], dict[str, Value]]:
        """Environment updates implied by ``x is None`` / ``x is not None`` tests."""
        true: dict[str, Value] = {}
        false: dict[str, Value] = {}
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name):
            comp = test.comparisons[0]
            if isinstance(comp.comparator, cst.Name) and comp.comparator.value == "None":
                name = test.left.value
                cur = self.env.get(name)
                if cur is not None:
                    not_none = cur.with_(maybe_none=False) if cur.kind is not Kind.PYTHON else cur
                    if isinstance(comp.operator, cst.IsNot):
                        true[name], false[name] = not_none, NONE_VALUE
                    elif isinstance(comp.operator, cst.Is):
                        true[name], false[name] = NONE_VALUE, not_none
        elif isinstance(test, cst.BooleanOperation):
            # `a and b` is true only when both are; `a or b` is false only when both are.  When one
            # operand is decided at trace time (`x is not None and is_compiling()`), the other one
            # alone decides the other branch too.
            (lt, lf), (rt, rf) = self.narrowing(test.left), self.narrowing(test.right)
            is_and = isinstance(test.operator, cst.And)
            if is_and:
                true = {**lt, **rt}
            else:
                false = {**lf, **rf}
            decided = is_and  # an operand that is always true (and) / always false (or)
            if self._known_truth(test.right) is decided:
                true, false = (true, lf) if is_and else (lt, false)
            elif self._known_truth(test.left) is decided:
                true, false = (true, rf) if is_and else (rt, false)
        elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            false, true = self.narrowing(test.expression)
        elif isinstance(test, cst.Call) and self.is_builtin(test.func, "isinstance") and len(test.args) == 2 \
                and isinstance(test.args[0].value, cst.Name) and test.args[0].value.value in self.env:
            # ``isinstance(x, torch.Tensor)``: x is a tensor where the test holds
            declared = _isinstance_value(self.p, test.args[1].value)
            if declared is not None:
                true[test.args[0].value.value] = declared
        return true, false

    def _known_truth(self, node: cst.BaseExpression) -> bool | None:
        """The truth of a test decided at trace time (``is_compiling()``, ``not is_scripting()``),
        evaluated silently; None when not known."""
        negate = False
        while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            node, negate = node.expression, not negate
        if not isinstance(node, (cst.Call, cst.Name, cst.Attribute)):
            return None
        emit, evidence = self.emit, self.evidence
        self.emit, self.evidence = False, None
        try:
            value = self.expr(node)
        finally:
            self.emit, self.evidence = emit, evidence
        if not value.has_const:
            return None
        try:
            return bool(value.const) != negate
        except Exception:
            return None

    # ------------------------------------------------------------------ conditions
    def condition(self, test: cst.BaseExpression, construct: str, owner: cst.CSTNode,
                  exits_loop: bool = False) -> bool | None:
        """Evaluate a truth test; report it; return its truth under compile if known."""
        negate = False
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            # `if not x:` tests the truth of x itself
            test = test.expression
            negate = not negate
        if isinstance(test, cst.BooleanOperation):
            truth = self._boolean_condition(test, construct, owner, exits_loop)
            return truth if truth is None else truth != negate
        value = self.expr(test)
        if negate and value.has_const:
            try:
                value = python(not value.const)
            except Exception:
                value = python(is_bool=True)
        self.use_scalar(value, test)
        if value.has_const:
            try:
                return bool(value.const)
            except Exception:
                return None
        self._truth_test(test, value, construct, exits_loop, negate)
        return None

    def _boolean_condition(self, test: cst.BooleanOperation, construct: str, owner: cst.CSTNode,
                           exits_loop: bool) -> bool | None:
        """``a and b`` / ``a or b`` used as a test: every operand that runs is converted to a Python
        bool (the last one by the test itself), and an operand after a decided one never runs."""
        is_and = isinstance(test.operator, cst.And)
        left = self.condition(test.left, construct, owner, exits_loop)
        if left is not None and left != is_and:
            return left  # `False and ...` / `True or ...`: the right operand is never evaluated
        right = self.with_narrowing(test.left, is_and, lambda: self.condition(test.right, construct, owner,
                                                                               exits_loop))
        if right is not None and right != is_and:
            return right  # `... and False` is never true, `... or True` always
        return right if left is not None else None

    def with_narrowing(self, test: cst.BaseExpression, when: bool, run: Callable[[], Any]) -> Any:
        """Run ``run`` in the environment narrowed by ``test`` being ``when`` (the right operand of
        ``and``/``or`` runs only after the left one decided so), then restore the environment."""
        narrowed = self.narrowing(test)[0 if when else 1]
        saved = {name: self.env.get(name) for name in narrowed}
        self.env.update(narrowed)
        emit = self.emit
        if when and _dtype_specialised(test):
            self.emit = False  # evaluated only for some dtypes: not known statically
        try:
            return run()
        finally:
            self.emit = emit
            for name, value in saved.items():
                if value is None:
                    self.env.pop(name, None)
                else:
                    self.env[name] = value

    def _truth_test(self, node: cst.CSTNode, value: Value, construct: str, exits_loop: bool = False,
                    negated: bool = False) -> None:
        if value.kind is Kind.UNKNOWN and value.params:
            self.not_tensor_evidence(value)
        self.report(E.ConditionEvent, node, value=value, construct=construct, exits_loop=exits_loop,
                    negated=negated)

    # ------------------------------------------------------------------ expressions
    def expr(self, node: cst.BaseExpression | None) -> Value:
        if node is None:
            return NONE_VALUE
        handler = _EXPR_HANDLERS.get(type(node))
        if handler is None:
            for child in _expr_children(node):
                self.expr(child)
            return UNKNOWN_VALUE
        value = handler(self, node)
        values = self.p.values
        if values is not None and self.emit:
            key = id(node)
            old = values.get(key)
            # a calling context that knows less (unknown) does not erase what another one knows
            if old is None or old.kind is Kind.UNKNOWN:
                values[key] = value
            elif value.kind is not Kind.UNKNOWN:
                values[key] = join(old, value)
        return value

    def lookup(self, node: cst.Name, record: bool = True) -> Value:
        name = node.value
        if name in self.env:
            return self.env[name]
        if name == "True":
            return python(True)
        if name == "False":
            return python(False)
        if name == "None":
            return NONE_VALUE
        fn = self.fn
        if fn is not None and name in fn.local_names:
            return UNKNOWN_VALUE  # assigned later (e.g. in a loop) or conditionally
        if fn is not None and fn.closure is not None and name in fn.closure:
            return fn.closure[name]
        v = self.p.global_value(name)
        if v is not None:
            if record and name in self.p.index.globals:
                self.report(E.GlobalReadEvent, node, name=name, value=v)
            return v
        if name in _BUILTIN_NAMES:
            return Value(Kind.PYTHON, qualname=f"builtins.{name}")
        return UNKNOWN_VALUE

    def use_scalar(self, v: Value, node: cst.CSTNode, context: str = "") -> None:
        """A data-dependent scalar is consumed by Python code (arithmetic, a call, a test...)."""
        if v.kind is Kind.SCALAR and v.origin is not None:
            self.report(E.ScalarUseEvent, node, value=v, context=context)

    def _name(self, node: cst.Name) -> Value:
        return self.lookup(node)

    def _literal(self, node: cst.CSTNode) -> Value:
        try:
            return python(node.evaluated_value)  # type: ignore[attr-defined]
        except Exception:
            return PYTHON_VALUE

    def _fstring(self, node: cst.FormattedString) -> Value:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                self.expr(part.expression)
                if part.format_spec:
                    for sp in part.format_spec:
                        if isinstance(sp, cst.FormattedStringExpression):
                            self.expr(sp.expression)
        return python(is_bool=False)

    def _concat(self, node: cst.ConcatenatedString) -> Value:
        self.expr(node.left)
        self.expr(node.right)
        return PYTHON_VALUE

    def _attribute(self, node: cst.Attribute) -> Value:
        base = self.expr(node.value)
        v = self.attribute(base, node.attr.value, node)
        if self.is_self(node.value) and self.fn is not None:
            self.report(E.AttributeEvent, node, cls=self.fn.cls, name=node.attr.value, value=v)
        return v

    def attribute(self, base: Value, attr: str, node: cst.CSTNode) -> Value:
        if base.qualname is not None and base.kind in (Kind.UNKNOWN, Kind.PYTHON) and not base.is_mapping:
            q = f"{base.qualname}.{attr}"
            if base.qualname.endswith("()"):
                return Value(Kind.UNKNOWN, qualname=q)
            return self.p.qualified_value(q)
        if base.kind is Kind.TENSOR:
            if attr in K.SIZE_ATTRS:
                return SIZE_VALUE
            if attr in K.PYTHON_ATTRS:
                return PYTHON_VALUE
            if attr in K.TENSOR_ATTRS:
                return tensor(params=base.params, from_weights=base.from_weights)
            return UNKNOWN_VALUE
        if base.kind is Kind.UNKNOWN and base.params:
            if attr in K.SIZE_ATTRS or attr in K.PYTHON_ATTRS or attr in K.TENSOR_ATTRS:
                self.tensor_evidence(base)
            elif attr in K.CONTAINER_METHODS:
                self.not_tensor_evidence(base)
            return Value(Kind.UNKNOWN, params=base.params)
        if base.kind is Kind.SEQUENCE and attr in ("values", "indices") and base.element is not None:
            return base.element
        if base.cls is not None:
            return self.p.member(base, attr)
        if base.kind is Kind.MODULE:
            if attr == "training":
                return python(is_bool=True)
            if attr in ("weight", "bias") and base.qualname and base.qualname.startswith("torch.nn."):
                return tensor(from_weights=True)
        return UNKNOWN_VALUE

    def _subscript_expr(self, node: cst.Subscript) -> Value:
        return self.subscript(node, store=False)

    def subscript(self, node: cst.Subscript, store: bool, augmented: bool = False) -> Value:
        base = self.expr(node.value)
        index: list[Value] = []
        bounds: list[Value] = []
        multi = len(node.slice) > 1
        for el in node.slice:
            s = el.slice
            if isinstance(s, cst.Index):
                v = self.expr(s.value)
                self.use_scalar(v, s.value)
                index.append(v)
                if isinstance(s.value, (cst.Ellipsis,)) or (isinstance(s.value, cst.Name) and s.value.value == "None"):
                    multi = True
            else:
                for part in (s.lower, s.upper, s.step):
                    if part is not None:
                        bounds.append(self.expr(part))
                index.append(Value(Kind.PYTHON, qualname="builtins.slice"))
                multi = multi or len(node.slice) > 1
        idx = tuple(index)
        if base.kind in (Kind.TENSOR, Kind.SEQUENCE, Kind.SIZE) or base.qualname is not None:
            self.report(E.SubscriptEvent, node, base=base, index=idx, store=store, augmented=augmented,
                        bounds=tuple(bounds))
        if base.kind is Kind.UNKNOWN and base.params and multi:
            self.tensor_evidence(base)
        return self.index_value(base, idx, node)

    def index_value(self, base: Value, idx: tuple[Value, ...], node: cst.Subscript) -> Value:
        k = base.kind
        if k is Kind.TENSOR:
            return tensor(is_bool=base.is_bool, params=base.params | merge_params(idx),
                          from_weights=base.from_weights)
        if k is Kind.SIZE:
            return SIZE_VALUE
        if k is Kind.SCALAR:
            return base
        if base.is_mapping and base.element is not None:
            return base.element
        if k is Kind.SEQUENCE:
            if len(idx) == 1 and idx[0].qualname == "builtins.slice":
                return base
            if len(idx) == 1 and base.items is not None and isinstance(idx[0].const, int):
                i = idx[0].const
                if -len(base.items) <= i < len(base.items):
                    return base.items[i]
            return base.elements()
        if k is Kind.MODULE:
            return Value(Kind.MODULE, cls=base.element.cls if base.element else None,
                         qualname=base.element.qualname if base.element else None)
        if k is Kind.UNKNOWN and base.params:
            return Value(Kind.UNKNOWN, params=base.params)
        return UNKNOWN_VALUE

    def _call(self, node: cst.Call) -> Value:
        from dynalint.analysis import calls

        return calls.evaluate_call(self, node)

    def binop(self, left: Value, right: Value, op: cst.CSTNode, node: cst.CSTNode | None = None) -> Value:
        return arith(left, right, op)

    def _binary(self, node: cst.BinaryOperation) -> Value:
        left = self.expr(node.left)
        right = self.expr(node.right)
        self.use_scalar(left, node.left)
        self.use_scalar(right, node.right)
        if isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString,
                                                                            cst.FormattedString)):
            values = right.items if right.kind is Kind.SEQUENCE and right.items is not None else (right,)
            self.report(E.StringFormatEvent, node, values=tuple(values))
            return PYTHON_VALUE  # "%s" % value: string formatting
        if isinstance(node.operator, cst.MatrixMultiply):
            self.tensor_evidence(left)
            self.tensor_evidence(right)
        return arith(left, right, node.operator)

    def _unary(self, node: cst.UnaryOperation) -> Value:
        v = self.expr(node.expression)
        self.use_scalar(v, node.expression)
        if isinstance(node.operator, cst.Not):
            if v.has_const:
                try:
                    return python(not v.const)
                except Exception:
                    return python(is_bool=True)
            self._truth_test(node, v, "not")
            if v.kind is Kind.TENSOR:
                return python(is_bool=True)
            if v.kind in (Kind.SIZE, Kind.SCALAR):
                return v.with_(is_bool=True, const=NO_CONST)
            return python(is_bool=True) if v.kind is Kind.PYTHON else UNKNOWN_VALUE
        if v.has_const and isinstance(node.operator, cst.Minus) and isinstance(v.const, (int, float)):
            return python(-v.const)
        return v.with_(const=NO_CONST) if v.kind is not Kind.UNKNOWN else Value(Kind.UNKNOWN, params=v.params)

    def _boolean(self, node: cst.BooleanOperation) -> Value:
        left = self.expr(node.left)
        is_and = isinstance(node.operator, cst.And)
        if left.has_const:
            try:
                truth = bool(left.const)
            except Exception:
                truth = None
            if truth is not None:
                if is_and and not truth:
                    return left
                if not is_and and truth:
                    return left
                return self.expr(node.right)
        self._truth_test(node.left, left, "boolop")
        right = self.with_narrowing(node.left, is_and, lambda: self.expr(node.right))
        if left.kind is Kind.TENSOR or right.kind is Kind.TENSOR:
            # the result is one of the operands: a tensor if both are
            return join(left, right) if left.kind is right.kind else UNKNOWN_VALUE
        if left.kind is Kind.PYTHON and right.kind is Kind.PYTHON:
            return python(is_bool=left.is_bool and right.is_bool)
        return join(left, right)

    def _comparison(self, node: cst.Comparison) -> Value:
        left = self.expr(node.left)
        self.use_scalar(left, node.left)
        values = [left]
        identity = False
        for comp in node.comparisons:
            v = self.expr(comp.comparator)
            self.use_scalar(v, comp.comparator)
            values.append(v)
            op = comp.operator
            if isinstance(op, (cst.Is, cst.IsNot)):
                identity = True
                if isinstance(comp.comparator, cst.Name) and comp.comparator.value in ("True", "False"):
                    self.not_tensor_evidence(left)
            elif isinstance(op, (cst.In, cst.NotIn)):
                self.report(E.ContainmentEvent, node, container=v)
                if v.kind is Kind.TENSOR:
                    return UNKNOWN_VALUE
                return python(is_bool=True) if v.kind is not Kind.UNKNOWN else UNKNOWN_VALUE
            if isinstance(comp.comparator, (cst.SimpleString, cst.FormattedString)):
                self.not_tensor_evidence(left)
        if identity:
            if len(values) == 2:
                a, b = values
                for x, y in ((a, b), (b, a)):
                    if y.has_const and y.const is None and x.kind is not Kind.UNKNOWN and not x.maybe_none:
                        is_not = isinstance(node.comparisons[0].operator, cst.IsNot)
                        if x.kind is Kind.PYTHON and x.has_const:
                            return python((x.const is None) != is_not)
                        if x.kind in (Kind.TENSOR, Kind.MODULE, Kind.FUNCTION, Kind.SIZE):
                            return python(is_not)
            return python(is_bool=True)
        self.report(E.ComparisonEvent, node, operands=tuple(values))
        result = values[0]
        for v in values[1:]:
            result = arith(result, v, None)
        if result.kind is Kind.TENSOR:
            return result.with_(is_bool=True)
        if result.kind is Kind.PYTHON:
            const = NO_CONST
            if len(values) == 2 and values[0].has_const and values[1].has_const:
                try:
                    const = _compare(node.comparisons[0].operator, values[0].const, values[1].const)
                except Exception:
                    const = NO_CONST
            return python(const, is_bool=True)
        if result.kind in (Kind.SIZE, Kind.SCALAR):
            return result.with_(is_bool=True)
        return result

    def _ifexp(self, node: cst.IfExp) -> Value:
        truth = self.condition(node.test, "ifexp", node)
        if truth is not None:
            return self.with_narrowing(node.test, truth, lambda: self.expr(node.body if truth else node.orelse))
        return join(self.with_narrowing(node.test, True, lambda: self.expr(node.body)),
                    self.with_narrowing(node.test, False, lambda: self.expr(node.orelse)))

    def _sequence(self, node: cst.Tuple | cst.List | cst.Set) -> Value:
        items = []
        starred = False
        for el in node.elements:
            v = self.expr(el.value)
            if isinstance(el, cst.StarredElement):
                starred = True
                v = v.elements()
            items.append(v)
        if starred:
            return sequence(element=join_all(items) if items else None)
        return sequence(items=items, element=join_all(items) if items else None)

    def _dict(self, node: cst.Dict) -> Value:
        values = []
        for el in node.elements:
            if isinstance(el, cst.DictElement):
                self.expr(el.key)
                values.append(self.expr(el.value))
            else:
                self.expr(el.value)
                values.append(UNKNOWN_VALUE)
        return mapping(join_all(values) if values else None)

    def _comprehension(self, node: cst.BaseComp) -> Value:
        saved = dict(self.env)
        comp = node.for_in
        try:
            while comp is not None:
                it = self.expr(comp.iter)
                self.bind(comp.target, it.elements(), self.statement)
                for cond in comp.ifs:
                    self.condition(cond.test, "comprehension", cond)
                comp = comp.inner_for_in
            if isinstance(node, cst.DictComp):
                self.expr(node.key)
                self.expr(node.value)
                return PYTHON_VALUE
            elt = self.expr(node.elt)
            return sequence(element=elt)
        finally:
            self.env = saved

    def _lambda(self, node: cst.Lambda) -> Value:
        return Value(Kind.PYTHON, qualname="builtins.function")

    def _named_expr(self, node: cst.NamedExpr) -> Value:
        v = self.expr(node.value)
        self.bind(node.target, v, self.statement)
        return v

    def _await(self, node: cst.Await) -> Value:
        self.expr(node.expression)
        return UNKNOWN_VALUE

    def _starred(self, node: cst.StarredElement) -> Value:
        return self.expr(node.value)

    # ------------------------------------------------------------------ helpers
    def is_self(self, node: cst.CSTNode) -> bool:
        return self.self_name is not None and isinstance(node, cst.Name) and node.value == self.self_name \
            and self.self_name in self.env

    def is_builtin(self, func: cst.CSTNode, name: str) -> bool:
        return isinstance(func, cst.Name) and func.value == name and name not in self.env and (
            self.fn is None or name not in self.fn.local_names) and self.p.global_value(name) is None


def arith(left: Value, right: Value, op: cst.CSTNode | None) -> Value:
    """The value of ``left <op> right`` (also used for comparisons, op=None)."""
    kinds = (left.kind, right.kind)
    if Kind.TENSOR in kinds:
        if any(v.kind is Kind.TENSOR and v.maybe_none for v in (left, right)):
            return Value(Kind.UNKNOWN, params=left.params | right.params)
        if Kind.MODULE in kinds or Kind.FUNCTION in kinds:
            return UNKNOWN_VALUE
        # a tensor combined with anything that works is a tensor
        bool_op = isinstance(op, (cst.BitAnd, cst.BitOr, cst.BitXor))
        return tensor(
            is_bool=bool_op and left.is_bool and right.is_bool,
            params=left.params | right.params,
            from_weights=all(v.from_weights if v.kind is Kind.TENSOR else v.kind is not Kind.UNKNOWN
                             for v in (left, right)),
        )
    if Kind.UNKNOWN in kinds or Kind.MODULE in kinds or Kind.FUNCTION in kinds:
        return Value(Kind.UNKNOWN, params=left.params | right.params)
    if Kind.SEQUENCE in kinds:
        if left.kind is Kind.SEQUENCE and right.kind is Kind.SEQUENCE:
            items = None
            if left.items is not None and right.items is not None:
                items = left.items + right.items
            return sequence(items=items, element=join(left.elements(), right.elements()))
        seq = left if left.kind is Kind.SEQUENCE else right
        return sequence(element=seq.elements())
    if Kind.SCALAR in kinds:
        scalars = [v for v in (left, right) if v.kind is Kind.SCALAR]
        return Value(Kind.SCALAR, origin=scalars[0].origin, origin_in_loop=scalars[0].origin_in_loop,
                     is_bool=op is None, from_weights=all(v.from_weights for v in scalars))
    if Kind.SIZE in kinds:
        return SIZE_VALUE
    const = NO_CONST
    if left.has_const and right.has_const and op is not None:
        const = _fold(op, left.const, right.const)
    elif isinstance(op, (cst.BitOr, cst.BitAnd)) and left.is_bool and right.is_bool:
        # `flag |= other_flag`: True absorbs `|`, False absorbs `&`
        absorbing = isinstance(op, cst.BitOr)
        if any(v.has_const and v.const is absorbing for v in (left, right)):
            const = absorbing
    is_bool = left.is_bool and right.is_bool and isinstance(op, (cst.BitOr, cst.BitAnd, cst.BitXor))
    return python(const, is_bool=is_bool or isinstance(const, bool))


#: ``x |= y`` computes ``x | y`` (the operators constant folding understands).
_AUGMENTED: dict[type, type] = {cst.BitOrAssign: cst.BitOr, cst.BitAndAssign: cst.BitAnd,
                                cst.BitXorAssign: cst.BitXor}


def _fold(op: cst.CSTNode, a: Any, b: Any) -> Any:
    try:
        if not (isinstance(a, (int, float, str)) and isinstance(b, (int, float, str))):
            return NO_CONST
        if isinstance(op, cst.Add):
            return a + b
        if isinstance(op, cst.Subtract):
            return a - b
        if isinstance(op, cst.Multiply) and not isinstance(a, str) and not isinstance(b, str):
            return a * b
        if isinstance(a, bool) and isinstance(b, bool) and isinstance(op, (cst.BitOr, cst.BitAnd, cst.BitXor)):
            return a | b if isinstance(op, cst.BitOr) else a & b if isinstance(op, cst.BitAnd) else a ^ b
    except Exception:
        return NO_CONST
    return NO_CONST


def _compare(op: cst.CSTNode, a: Any, b: Any) -> Any:
    if isinstance(op, cst.Equal):
        return a == b
    if isinstance(op, cst.NotEqual):
        return a != b
    return NO_CONST


def _dtype_specialised(test: cst.BaseExpression) -> bool:
    """``x.dtype == torch.float16`` (possibly first in an ``and`` chain): a trace-time
    decision on a dtype the static analysis does not know."""
    while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        if _dtype_specialised(test.left):
            return True
        test = test.right
    if isinstance(test, cst.Comparison):
        operands = [test.left, *(c.comparator for c in test.comparisons)]
        return any(isinstance(o, cst.Attribute) and o.attr.value == "dtype" for o in operands) and not any(
            isinstance(c.operator, (cst.Is, cst.IsNot)) for c in test.comparisons)
    return False


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


def _expr_children(node: cst.CSTNode) -> Iterable[cst.BaseExpression]:
    from dynalint.analysis.syntax import children

    for c in children(node):
        if isinstance(c, cst.BaseExpression):
            yield c


_SEQUENCE_ANNOTATIONS = frozenset({"tuple", "Tuple", "list", "List", "Sequence", "typing.Tuple", "typing.List",
                                   "typing.Sequence", "collections.abc.Sequence", "Iterable", "typing.Iterable"})
_PYTHON_CONTAINER_ANNOTATIONS = frozenset({"set", "Set", "typing.Set", "frozenset", "FrozenSet"})
_MAPPING_ANNOTATIONS = frozenset({"dict", "Dict", "typing.Dict", "Mapping", "typing.Mapping", "MutableMapping",
                                  "OrderedDict", "collections.OrderedDict", "typing.OrderedDict",
                                  "collections.abc.Mapping"})


def annotation_value(program: "ProgramView", ann: cst.BaseExpression) -> Value | None:
    """The value an annotation promises (a tensor, a plain Python value, a sequence of
    either), or None when the annotation names something else."""
    if isinstance(ann, cst.SimpleString):
        try:
            return annotation_value(program, cst.parse_expression(ann.evaluated_value))
        except Exception:
            return None
    if isinstance(ann, cst.Subscript):
        base = dotted_name(ann.value) or ""
        inner = [annotation_value(program, el.slice.value) for el in ann.slice if isinstance(el.slice, cst.Index)]
        if base in ("Optional", "typing.Optional") and len(inner) == 1:
            return _optional(inner[0])
        if base in ("Union", "typing.Union"):
            return _union(inner)
        if base in _SEQUENCE_ANNOTATIONS:
            known = [v for v in inner if v is not None]
            if base.endswith(("tuple", "Tuple")) and len(inner) == 2 and isinstance(ann.slice[1].slice, cst.Index) \
                    and isinstance(ann.slice[1].slice.value, cst.Ellipsis):
                known, inner = known[:1], inner[:1]  # tuple[Tensor, ...]
            element = join_all(known) if known and len(known) == len(inner) else None
            if base.endswith(("tuple", "Tuple")) and len(inner) > 1:
                return sequence(items=[v if v is not None else UNKNOWN_VALUE for v in inner], element=element)
            return sequence(element=element) if element is not None else sequence(element=UNKNOWN_VALUE)
        if base in _MAPPING_ANNOTATIONS:
            return mapping(inner[-1] if len(inner) == 2 and inner[-1] is not None else None)
        if base in _PYTHON_CONTAINER_ANNOTATIONS:
            return PYTHON_VALUE
        return None
    if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):
        return _union([annotation_value(program, ann.left), annotation_value(program, ann.right)])
    text = dotted_name(ann)
    if text is None:
        return None
    resolved = program.index.resolve(text) or text
    if text in K.TENSOR_ANNOTATIONS or resolved in ("torch.Tensor", "torch.nn.Parameter", "torch.FloatTensor",
                                                    "torch.LongTensor", "torch.BoolTensor"):
        return tensor(is_bool=text.endswith("BoolTensor"))
    if text == "None":
        return NONE_VALUE
    if resolved == "torch.Size":
        return SIZE_VALUE
    if text in K.PYTHON_ANNOTATIONS or resolved in ("torch.dtype", "torch.device"):
        return python(is_bool=text == "bool")
    if text in _MAPPING_ANNOTATIONS:
        return mapping(None)
    if text in _PYTHON_CONTAINER_ANNOTATIONS:
        return PYTHON_VALUE
    # ``OptTensor = Optional[Tensor]``, or a subclass of torch.Tensor
    return program.annotation_alias(text)


def _isinstance_value(program: "ProgramView", classes: cst.BaseExpression) -> Value | None:
    """What ``isinstance(x, classes)`` being true says x is (tensor or plain Python value)."""
    parts = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
    values = [annotation_value(program, p) for p in parts]
    if values and all(v is not None and v.kind is Kind.TENSOR for v in values):
        return tensor()
    if values and all(v is not None and v.kind is Kind.PYTHON and not v.is_mapping and v.const is not None
                      for v in values):
        return PYTHON_VALUE
    return None


def _optional(inner: Value | None) -> Value | None:
    if inner is None:
        return None
    return inner.with_(maybe_none=True) if inner.kind is Kind.TENSOR else inner


def _union(parts: list[Value | None]) -> Value | None:
    rest = [p for p in parts if not (p is not None and p.kind is Kind.PYTHON and p.const is None)]
    has_none = len(rest) < len(parts)
    if len(rest) == 1:
        return _optional(rest[0]) if has_none else rest[0]
    if rest and all(p is not None and p.kind is Kind.PYTHON for p in rest):
        return PYTHON_VALUE
    return None


_STMT_HANDLERS: dict[type, Callable[[FunctionEvaluator, Any], None]] = {
    cst.Assign: FunctionEvaluator._assign,
    cst.AnnAssign: FunctionEvaluator._ann_assign,
    cst.AugAssign: FunctionEvaluator._aug_assign,
    cst.Expr: FunctionEvaluator._expr_stmt,
    cst.Return: FunctionEvaluator._return,
    cst.Raise: FunctionEvaluator._raise,
    cst.Break: FunctionEvaluator._jump,
    cst.Continue: FunctionEvaluator._jump,
    cst.Assert: FunctionEvaluator._assert,
    cst.Del: FunctionEvaluator._del,
    cst.Import: FunctionEvaluator._import,
    cst.ImportFrom: FunctionEvaluator._import,
    cst.If: FunctionEvaluator._if,
    cst.For: FunctionEvaluator._for,
    cst.While: FunctionEvaluator._while,
    cst.With: FunctionEvaluator._with,
    cst.Try: FunctionEvaluator._try,
    cst.FunctionDef: FunctionEvaluator._funcdef,
    cst.ClassDef: FunctionEvaluator._classdef,
}

_EXPR_HANDLERS: dict[type, Callable[[FunctionEvaluator, Any], Value]] = {
    cst.Name: FunctionEvaluator._name,
    cst.Integer: FunctionEvaluator._literal,
    cst.Float: FunctionEvaluator._literal,
    cst.Imaginary: FunctionEvaluator._literal,
    cst.SimpleString: FunctionEvaluator._literal,
    cst.ConcatenatedString: FunctionEvaluator._concat,
    cst.FormattedString: FunctionEvaluator._fstring,
    cst.Attribute: FunctionEvaluator._attribute,
    cst.Subscript: FunctionEvaluator._subscript_expr,
    cst.Call: FunctionEvaluator._call,
    cst.BinaryOperation: FunctionEvaluator._binary,
    cst.UnaryOperation: FunctionEvaluator._unary,
    cst.BooleanOperation: FunctionEvaluator._boolean,
    cst.Comparison: FunctionEvaluator._comparison,
    cst.IfExp: FunctionEvaluator._ifexp,
    cst.Tuple: FunctionEvaluator._sequence,
    cst.List: FunctionEvaluator._sequence,
    cst.Set: FunctionEvaluator._sequence,
    cst.Dict: FunctionEvaluator._dict,
    cst.ListComp: FunctionEvaluator._comprehension,
    cst.SetComp: FunctionEvaluator._comprehension,
    cst.GeneratorExp: FunctionEvaluator._comprehension,
    cst.DictComp: FunctionEvaluator._comprehension,
    cst.Lambda: FunctionEvaluator._lambda,
    cst.NamedExpr: FunctionEvaluator._named_expr,
    cst.Await: FunctionEvaluator._await,
    cst.StarredElement: FunctionEvaluator._starred,
    cst.Ellipsis: lambda self, node: PYTHON_VALUE,
}
