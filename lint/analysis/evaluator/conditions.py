"""Truth tests: what a condition reports, what it is known to be, and what it narrows.

``if``/``while``/``assert``/``x if c else y``, ``and``/``or``/``not`` and comprehension filters all
convert a value to a Python bool; a tensor there is a graph break.  The same tests also narrow the
environment (``x is not None``, ``isinstance(x, Tensor)``) and may be decided while tracing
(``is_compiling()``), which decides which branches run.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import libcst as cst

from dynalint.analysis import events as E
from dynalint.analysis import knowledge as K
from dynalint.analysis.calls import call_special
from dynalint.analysis.evaluator.annotations import _isinstance_value, narrowed_union, union_members
from dynalint.analysis.syntax import dotted_name
from dynalint.analysis.values import NONE_VALUE, UNKNOWN_VALUE, Kind, Value, python, tensor


class ConditionHandlers:
    """The truth-test part of :class:`~dynalint.analysis.evaluator.core.FunctionEvaluator`."""

    def narrowing(self, test: cst.BaseExpression) -> tuple[dict[str, Value], dict[str, Value]]:
        """Environment updates implied by ``x is None`` / ``x is not None`` tests.

        The narrowing of an ``and``/``or`` chain is remembered while the environment holds the same
        values: each link of a long chain asks for the narrowing of the links before it (else the
        cost grows with the square of the chain)."""
        if not isinstance(test, cst.BooleanOperation):
            return self._narrowing(test)
        memo: dict[int, tuple] = self.__dict__.setdefault("_narrowing_memo", {})
        state = tuple((name, id(value)) for name, value in self.env.items())
        known = memo.get(id(test))
        if known is not None and known[0] is test and known[1] == state:
            return known[2]
        result = self._narrowing(test)
        memo[id(test)] = (test, state, result)
        return result

    def _narrowing(self, test: cst.BaseExpression) -> tuple[dict[str, Value], dict[str, Value]]:
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
        elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and _bool_dtype_test(test) is not None:
            # ``mask.dtype == torch.bool``: where it holds, the tensor is a mask (indexing with it selects)
            name, equal = _bool_dtype_test(test)  # type: ignore[misc]
            cur = self.env.get(name)
            if cur is not None and cur.kind is Kind.TENSOR and not cur.is_bool:
                (true if equal else false)[name] = cur.with_(is_bool=True, maybe_none=False)
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
        elif (typed := self._type_test(test)) is not None:
            # ``isinstance(x, torch.Tensor)``: x is a tensor where the test holds
            name, declared = typed
            annotated = self.p.signatures.declared_types(self.fn).get(name) if self.fn is not None else None
            if declared is not None and not _known_otherwise(declared, self.env[name]) \
                    and not (annotated is not None and _known_otherwise(declared, annotated)) \
                    and not (declared.is_mapping and self.env[name].is_mapping):  # (a dict known better already)
                untyped = (self.env[name].kind is Kind.UNKNOWN or self.env[name].assumed) \
                    and declared.kind is Kind.TENSOR \
                    and declared.cls is None and declared.qualname is None
                # (known as the class or a subclass already)
                of_subclass = declared.cls is not None and self.env[name].cls is not None
                if not of_subclass:
                    true[name] = declared.with_(open_class=True) if untyped else declared
            if declared is not None and declared.kind is Kind.TENSOR and declared.cls is None \
                    and declared.qualname is None and self.env[name].kind is Kind.TENSOR and self.env[name].assumed:
                # where `isinstance(x, torch.Tensor)` fails, x is no tensor, whatever it was taken for (an
                # untyped parameter, a `float | Tensor` argument): Dynamo decides the test while tracing.  A
                # value known to be a tensor keeps its value there (that side never runs)
                false[name] = UNKNOWN_VALUE
            if declared is None and self.env[name].kind is Kind.TENSOR and self.env[name].cls is None:
                # `isinstance(inpt, tv_tensors.KeyPoints)` of a class the analysis does not see: where it holds,
                # the tensor may be an instance of a subclass
                true[name] = self.env[name].with_(open_class=True)
            if self.env[name].kind is Kind.UNKNOWN:
                true.update(self._union_narrowed(test, name, True))
                false.update(self._union_narrowed(test, name, False))
        return true, false

    def _union_narrowed(self, test: cst.BaseExpression, name: str, holds: bool) -> dict[str, Value]:
        """``isinstance(x, dict)`` of a parameter annotated ``Union[Tensor, Dict[str, Tensor]]``: where the test
        holds (``holds``) or fails, the members of the union left (see :func:`narrowed_union`)."""
        ann = self.p.signatures.annotations(self.fn)[0].get(name) if self.fn is not None else None
        members = union_members(self.p, ann) if ann is not None and isinstance(test, cst.Call) \
            and len(test.args) == 2 else None
        narrowed = narrowed_union(self.p, members, test.args[1].value, holds) if members is not None else None
        return {name: narrowed} if narrowed is not None else {}

    def type_test_fails(self, test: cst.BaseExpression) -> bool:
        """``test`` (or a link of its ``and`` chain) is ``isinstance(x, C)`` with ``x`` known to be something
        ``C`` cannot narrow it to (:func:`_known_otherwise`): where the test holds, the code may never run, and
        what it would do there is not reported (``np.nonzero(x)`` under ``isinstance(x, np.ndarray)`` when x
        is known to be a torch tensor)."""
        while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            if self.type_test_fails(test.left):
                return True
            test = test.right
        typed = self._type_test(test)
        if typed is None:
            return False
        name, declared = typed
        if declared is not None and declared.kind is Kind.PYTHON and not declared.is_mapping \
                and _untyped(self.env[name]):
            # `isinstance(arg, str) and os.path.exists(arg)` of a value of no known type: compiled code passes
            # tensors far more often than strings or numbers, and whether it does here is not known (a dict, a
            # batch, is passed often enough to be judged)
            return True
        annotated = self.p.signatures.declared_types(self.fn).get(name) if self.fn is not None else None
        return declared is not None and (_known_otherwise(declared, self.env[name])
                                         or (annotated is not None and _known_otherwise(declared, annotated)))

    def _type_test(self, test: cst.BaseExpression) -> tuple[str, Value | None] | None:
        """``isinstance(x, C)``, or ``torch.is_tensor(x)`` (an ``isinstance(x, torch.Tensor)`` Dynamo decides
        while tracing as well), with ``x`` a local name: the name, and what the test holding says it is (None
        when the classes say nothing the analysis uses); None for any other test."""
        if not isinstance(test, cst.Call) or not test.args or not isinstance(test.args[0].value, cst.Name) \
                or test.args[0].value.value not in self.env:
            return None
        name = test.args[0].value.value
        if len(test.args) == 2 and self.is_builtin(test.func, "isinstance"):
            return name, _isinstance_value(self.p, test.args[1].value)
        called = dotted_name(test.func) if len(test.args) == 1 else None
        if called is not None and (self.p.index.resolve(called) or called) == "torch.is_tensor":
            return name, tensor()
        return None

    def silent_expr(self, node: cst.BaseExpression) -> Value:
        """The value of an expression evaluated again without reporting anything."""
        emit, evidence = self.emit, self.evidence
        self.emit, self.evidence = False, None
        try:
            return self.expr(node)
        finally:
            self.emit, self.evidence = emit, evidence

    def _known_truth(self, node: cst.BaseExpression) -> bool | None:
        """The truth of a test decided at trace time (``is_compiling()``, ``not is_scripting()``),
        evaluated silently; None when not known."""
        negate = False
        while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            node, negate = node.expression, not negate
        if not isinstance(node, (cst.Call, cst.Name, cst.Attribute)):
            return None
        value = self.silent_expr(node)
        if not value.has_const:
            return None
        try:
            return bool(value.const) != negate
        except Exception:
            return None

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
        outer, self.branch_test = self.branch_test, test
        try:
            value = self.expr(test)
        finally:
            self.branch_test = outer
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
        if value.cls is not None and value.kind is not Kind.TENSOR and not value.maybe_none \
                and call_special(self, value, "__bool__", []) is None:
            call_special(self, value, "__len__", [])  # (Python's truth of an object without `__bool__`)
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
        emit = self.emit
        if left is None and self._omitted_argument_test(test.left, is_and):
            # the right operand runs only when the caller passed an optional argument
            # (`labels is not None and labels.max() > n`): Dynamo specialises on the argument being
            # None, and whether callers pass it is not known, so what it would break is not reported
            self.emit = False
        try:
            right = self.with_narrowing(test.left, is_and, lambda: self.condition(test.right, construct, owner,
                                                                                   exits_loop))
        finally:
            self.emit = emit
        if right is not None and right != is_and:
            return right  # `... and False` is never true, `... or True` always
        return right if left is not None else None

    def _omitted_argument_test(self, test: cst.BaseExpression, when: bool) -> bool:
        """``test`` being ``when`` says an optional parameter (one that defaults to ``None``) was
        passed: ``x is not None``."""
        if self.fn is None:
            return False
        narrowed = self.narrowing(test)[0 if when else 1]
        if not narrowed:
            return False
        p = self.fn.node.params
        optional = {prm.name.value for prm in (*p.posonly_params, *p.params, *p.kwonly_params)
                    if prm.default is not None and isinstance(prm.default, cst.Name)
                    and prm.default.value == "None"}
        return any(name in optional and value is not NONE_VALUE for name, value in narrowed.items())

    def with_narrowing(self, test: cst.BaseExpression, when: bool, run: Callable[[], Any]) -> Any:
        """Run ``run`` in the environment narrowed by ``test`` being ``when`` (the right operand of
        ``and``/``or`` runs only after the left one decided so), then restore the environment."""
        narrowed = self.narrowing(test)[0 if when else 1]
        unjudged = when and (_dtype_specialised(test) or self.type_test_fails(test))  # (before narrowing)
        saved = {name: self.env.get(name) for name in narrowed}
        self.env.update(narrowed)
        emit = self.emit
        if unjudged:
            self.emit = False  # evaluated only for some dtypes, or maybe never: not known statically
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
        # the test of a `while` that no other loop encloses: a break there does not make Dynamo run the
        # function eagerly; it resumes at the loop header and compiles the body as a graph of its own
        # (measured on torch 2.13; a break in the body, or in a loop around it, still does)
        header = construct == "while" and self.loop_depth == 1 and not self.outer_loop
        self.report(E.ConditionEvent, node, value=value, construct=construct, exits_loop=exits_loop,
                    negated=negated, **({"in_loop": False} if header else {}))


def _bool_dtype_test(test: cst.Comparison) -> tuple[str, bool] | None:
    """``x.dtype == torch.bool`` (``!=``, ``is``, ``is not``, either side): (``x``, whether the test holds
    when ``x`` is boolean)."""
    comp = test.comparisons[0]
    sides = (test.left, comp.comparator)
    dtype = next((o for o in sides if isinstance(o, cst.Attribute) and o.attr.value == "dtype"
                  and isinstance(o.value, cst.Name)), None)
    other = sides[1] if dtype is sides[0] else sides[0]
    if dtype is None or dotted_name(other) != "torch.bool":
        return None
    if isinstance(comp.operator, (cst.Equal, cst.Is)):
        return dtype.value.value, True  # type: ignore[union-attr]
    if isinstance(comp.operator, (cst.NotEqual, cst.IsNot)):
        return dtype.value.value, False  # type: ignore[union-attr]
    return None


@functools.lru_cache(maxsize=4096)  # nodes hash by identity; a long `and` chain asks for each link again
def _dtype_specialised(test: cst.BaseExpression) -> bool:
    """``x.dtype == torch.float16`` (possibly first in an ``and`` chain): a trace-time
    decision on a dtype the static analysis does not know.  ``mask.dtype == torch.bool`` is not one: it
    tells a mask from other tensors, as ``isinstance`` tells types apart, and the path is the mask's."""
    while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        if _dtype_specialised(test.left):
            return True
        test = test.right
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and _bool_dtype_test(test) is not None:
        return False
    if isinstance(test, cst.Comparison):
        operands = [test.left, *(c.comparator for c in test.comparisons)]
        return any(isinstance(o, cst.Attribute) and o.attr.value == "dtype" for o in operands) and not any(
            isinstance(c.operator, (cst.Is, cst.IsNot)) for c in test.comparisons)
    return False


def _untyped(v: Value) -> bool:
    """Nothing is known of what ``v`` is (no class, function or choice of the checked code)."""
    return v.kind is Kind.UNKNOWN and v.cls is None and v.func is None and not v.choices and v.qualname is None


def _known_otherwise(declared: Value, v: Value) -> bool:
    """``v`` is known to be something ``isinstance`` cannot narrow it to: where the test holds, the code may
    not run, and what it would do there is not reported. A NumPy array is no torch tensor and no Python value;
    a plain tensor the analysis knows of (declared, or computed) is not taken for an instance of a tensor
    subclass, nor for a string or a Python number. A tensor only assumed of an untyped parameter, or one an
    ``isinstance(x, torch.Tensor)`` made of an untyped value, may be either; a parameter annotated as a plain
    tensor is one, whatever its callers pass."""
    if declared.qualname == K.NUMPY_ARRAY:
        return (v.kind is Kind.TENSOR and v.qualname != K.NUMPY_ARRAY and not v.assumed) \
            or v.kind in (Kind.PYTHON, Kind.SIZE, Kind.SEQUENCE)
    if declared.kind is Kind.PYTHON and not declared.is_mapping:
        # (a NumPy value may be a Python number: `np.float64` is a `float`)
        return v.kind is Kind.TENSOR and not v.assumed and v.qualname != K.NUMPY_ARRAY
    if declared.kind is not Kind.TENSOR and declared.cls is not None:
        # an instance of a class of the checked code: a value of another class it knows is none (one of the
        # class or a subclass is known as well already), nor is a tensor, a number or a sequence
        return (v.cls is not None and declared.cls not in v.cls.mro()) \
            or (v.kind is Kind.TENSOR and not v.assumed) or v.kind in (Kind.PYTHON, Kind.SIZE, Kind.SEQUENCE)
    return declared.cls is not None and v.kind is Kind.TENSOR and v.cls is None and not v.assumed \
        and not v.open_class
