"""The evaluator class, assembled from its parts, and the node-type dispatch tables.

:class:`FunctionEvaluator` holds the state of one evaluation (environment, calling context, where events
go) and dispatches each statement and expression node to its handler; the handlers live in
:mod:`~dynalint.analysis.evaluator.statements`, :mod:`~dynalint.analysis.evaluator.expressions`,
:mod:`~dynalint.analysis.evaluator.conditions` and :mod:`~dynalint.analysis.evaluator.evidence`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

import libcst as cst

from dynalint.analysis.eager_part import returns_before_back_edge
from dynalint.analysis.evaluator.comprehension_frames import ComprehensionFrames
from dynalint.analysis.evaluator.conditions import ConditionHandlers
from dynalint.analysis.evaluator.evidence import Evidence, EvidenceCollector
from dynalint.analysis.evaluator.expressions import ExpressionHandlers
from dynalint.analysis.evaluator.statements import StatementHandlers
from dynalint.analysis.replay import function_token
from dynalint.analysis.values import NONE_VALUE, PYTHON_VALUE, UNKNOWN_VALUE, Kind, Value, join
from dynalint.analysis.module_index import body_bindings, names_bound_by
from dynalint.analysis.syntax import children, dotted_name, walk

if TYPE_CHECKING:  # pragma: no cover
    from dynalint.analysis.module_index import FunctionInfo
    from dynalint.analysis.interface import ProgramView


class FunctionEvaluator(StatementHandlers, ExpressionHandlers, ConditionHandlers, EvidenceCollector,
                        ComprehensionFrames):
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
        if fn is not None and program.tracker is not None:
            program.tracker.touch(function_token(fn))
        self.env = env
        self.emit = emit
        self.depth = depth
        self.evidence = evidence
        self.loop_depth = 0
        self.loop_bodies: list[cst.CSTNode] = []
        """The bodies of the loops around the statement being run, innermost last."""
        self._loop_ends: dict[int, int] = {}
        self.frame_start = False
        """The function is one Dynamo starts a frame at (compiled itself), or is called from one through calls
        outside any loop: whether a break in one of its loops is one Dynamo resumes from can be told from its
        own code (Dynamo's test reads the callers' loops too, which are not known of a library function)."""
        self.outer_loop = False
        """The call being analysed sits inside a loop of the caller."""
        self.callee_broke = False
        """A function called in the current statement broke the graph (its events may have been
        recorded by an earlier call with the same arguments, or in another module's program)."""
        self.calls_broke = False
        """A function called by a statement of the block being run broke the graph (see ``callee_broke``)."""
        self.branch_test: cst.CSTNode | None = None
        """The test of the Python branch being evaluated (``if``, ``while``, ``assert``, an operand of its
        ``and``/``or``)."""
        self.attr_sink: dict[str, Value] | None = None
        """When analysing ``__init__``: where ``self.<attr> = value`` bindings are recorded."""
        self.not_followed: "FunctionInfo | None" = None
        """A function whose calls here are not analysed: the one whose callers a search evaluates, for what
        they pass it (its body then says nothing of what they pass, and an edit of it leaves the search)."""
        self.statement: cst.CSTNode = fn.node if fn is not None else program.index.module
        self.returns: list[Value] = []
        self.yielded: list[Value] = []
        """The values a generator function's ``yield`` expressions hand its caller."""
        self.top_index = -1
        """The index of the top-level statement of the function being run (-1 before the first)."""
        self.top_statement: cst.CSTNode | None = None
        self.sure_suites: list[cst.BaseSuite] = []
        """The blocks being run that run whenever the statement holding them does: the branch of an ``if``
        the analysis decided, the body of a loop over a module's parameters."""
        self.comprehensions: list[cst.BaseComp] = []
        """The comprehensions whose parts are being evaluated, innermost last."""
        self.pending_frames: list[tuple[cst.BaseComp, cst.CSTNode, int]] = []
        """Comprehensions of top-level statements and of their blocks but loops and ``except`` handlers
        (node, statement, index) that break if the function
        runs eagerly (:mod:`~dynalint.analysis.evaluator.comprehension_frames`)."""
        self.eager_at: list[int] = []
        """Indexes of the top-level statements that broke the graph inside a loop (or at a context manager
        Dynamo cannot enter): Dynamo then runs the function eagerly."""
        self.eager_from: list[int] = []
        """Indexes of the top-level ``try`` statements whose body broke the graph: Dynamo cannot resume
        inside a ``try`` block, so the function runs eagerly from that statement on."""
        self.broke_at: list[int] = []
        """Indexes of the top-level statements that broke the graph otherwise."""
        self.loop_broke = False
        """A statement inside a loop of the current top-level statement broke the graph."""
        self.top_calls_broke = False
        """A function called by the current top-level statement broke the graph."""
        self.self_name: str | None = None
        if fn is not None and fn.cls is not None and not fn.is_static:
            names = fn.param_names()
            self.self_name = names[0] if names else None

    # ------------------------------------------------------------------ events
    def report(self, event_type: type, node: cst.CSTNode, **kw: Any) -> None:
        if self.emit and self.fn is not None:
            if "in_loop" not in kw:
                kw["in_loop"] = self.in_loop()
            self.p.events.append(event_type(node=node, statement=self.statement, function=self.fn, **kw))

    def in_loop(self) -> bool:
        """A break at the current statement is one Dynamo cannot resume from, being inside a loop: of this
        function (unless a ``return`` comes before the loop's jump back, :func:`returns_before_back_edge`, in
        a function whose callers are known: :attr:`frame_start`), or of the caller of the call analysed."""
        if self.outer_loop:
            return True
        if self.loop_depth == 0 or self.fn is None:
            return False
        return not (self.frame_start and self.loop_bodies and returns_before_back_edge(
            self.fn, self.loop_bodies[-1], self.statement, self._loop_ends))

    # ------------------------------------------------------------------ dispatch
    def stmt(self, node: cst.CSTNode) -> None:
        self.statement = node
        handler = _STMT_HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node)

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

    # ------------------------------------------------------------------ helpers
    def is_self(self, node: cst.CSTNode) -> bool:
        return self.self_name is not None and isinstance(node, cst.Name) and node.value == self.self_name \
            and self.self_name in self.env

    def is_state(self, node: cst.CSTNode) -> bool:
        """``node`` is ``self`` and its attributes are state kept across calls: not in the ``__init__`` (or a
        record's ``__post_init__``) compiled code runs to build a new object, whose attributes it sets
        before anything reads them."""
        return self.is_self(node) and self.fn is not None and self.fn.name not in _INITIALISERS

    def held_object(self, node: cst.CSTNode, value: Value) -> str | None:
        """The code of ``node`` (``self.model``) when it is an attribute of ``self`` (state kept across calls,
        :meth:`is_state`) holding an object of a class of the checked code, ``value``: its own attributes are
        state too, which Dynamo guards on where compiled code reads them.  A local name bound once to such an
        attribute (``cfg = self.cfg``) is that attribute: Dynamo guards ``self.cfg.gamma`` where ``cfg.gamma``
        is read (measured on torch 2.13)."""
        if type(node) is cst.Name and self.fn is not None:
            node = self.fn.derived("attributes aliased", _aliased_attributes).get(node.value, node)
        if type(node) is not cst.Attribute or not self.is_state(node.value) or value.cls is None \
                or value.is_class or value.kind not in (Kind.UNKNOWN, Kind.MODULE) or value.choices:
            return None
        return dotted_name(node)

    def argument_object(self, node: cst.CSTNode, value: Value) -> str | None:
        """The name ``node`` when it is a parameter of the compiled function itself (its frame's argument,
        never rebound there) holding an object of a plain class of the checked code, ``value``: what a call
        stores on it, the next call finds (``state.step += 1`` of the ``state`` the caller passes each
        time)."""
        fn = self.fn
        if type(node) is not cst.Name or fn is None or id(fn) not in self.p.entry_points.entered \
                or value.cls is None or value.is_class or value.kind is not Kind.UNKNOWN or value.choices \
                or node.value not in fn.param_names()[1 if fn.is_method else 0:] \
                or node.value in fn.derived("names bound in the body", body_bindings):
            return None
        return node.value

    def is_builtin(self, func: cst.CSTNode, name: str) -> bool:
        return isinstance(func, cst.Name) and func.value == name and name not in self.env and (
            self.fn is None or name not in self.fn.local_names) and self.p.names.global_value(name) is None


_INITIALISERS = frozenset({"__init__", "__post_init__"})



def _expr_children(node: cst.CSTNode) -> Iterable[cst.BaseExpression]:
    for c in children(node):
        if isinstance(c, cst.BaseExpression):
            yield c


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
    cst.Match: FunctionEvaluator._match,
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
    cst.Yield: FunctionEvaluator._yield,
    cst.StarredElement: FunctionEvaluator._starred,
    cst.Ellipsis: lambda self, node: PYTHON_VALUE,
}


def _aliased_attributes(fn: cst.FunctionDef) -> dict[str, cst.Attribute]:
    """The local names a function binds once, and only by a plain assignment of an attribute (``cfg =
    self.cfg``), with that attribute."""
    params = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
    bindings: dict[str, list[cst.CSTNode]] = {}
    for n in walk(fn.body, into_scopes=False):
        for name in names_bound_by(n):
            bindings.setdefault(name, []).append(n)
    return {name: found[0].value for name, found in bindings.items()  # type: ignore[attr-defined, misc]
            if len(found) == 1 and type(found[0]) is cst.Assign and len(found[0].targets) == 1
            and type(found[0].targets[0].target) is cst.Name and type(found[0].value) is cst.Attribute
            and name not in params}
